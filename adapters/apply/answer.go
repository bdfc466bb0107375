package apply

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// answers keeps the buffers the answers to status applies are read into
// between applies: an answer is the whole object, a few kilobytes, of
// which only the status is kept.
var answers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readStatus reads answer, the body of an accepted apply's answer, to its
// end, closes it, and returns a copy of the object's status member, nil
// when the object has none, or when the answer is cut short or isn't an
// object: its status code already said the apply was made, and a caller
// that gets no status only loses the chance to skip the next apply.
func readStatus(answer io.ReadCloser) []byte {
	buf := answers.Get().(*bytes.Buffer)
	defer answers.Put(buf)
	buf.Reset()
	_, err := buf.ReadFrom(answer)
	_ = answer.Close()
	if err != nil {
		return nil
	}
	status := member(buf.Bytes(), "status")
	if status == nil || string(status) == "null" || !json.Valid(status) {
		return nil
	}
	return bytes.Clone(status)
}

// member returns the value of doc's top-level member name, a slice of
// doc, or nil when doc, a JSON object, has none. It reads no more than it
// must to find the member, and checks nothing of the values it passes
// over but where they end, so its caller checks the value it returns. A
// name written with an escape isn't name; the API server writes none.
func member(doc []byte, name string) []byte {
	i := space(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil
	}
	for i = space(doc, i+1); i < len(doc) && doc[i] == '"'; i = space(doc, i+1) {
		end := stringEnd(doc, i)
		if end < 0 {
			return nil
		}
		key := doc[i+1 : end-1]
		i = space(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return nil
		}
		start := space(doc, i+1)
		i = valueEnd(doc, start)
		if i < 0 {
			return nil
		}
		if string(key) == name {
			return doc[start:i]
		}
		i = space(doc, i)
		if i >= len(doc) || doc[i] != ',' {
			return nil
		}
	}
	return nil
}

// space returns the index of the first byte at or after i that isn't
// white space.
func space(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that begins at doc[i],
// or -1 when it never ends. It looks for the next quote with
// bytes.IndexByte, which reads many bytes at a time: most of an answer
// is the strings of its managedFields. A quote ends the string unless an
// odd number of backslashes stands before it, the last escaping it.
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		k := bytes.IndexByte(doc[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		backslashes := 0
		for b := j - 1; b > i && doc[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index just past the value that begins at doc[i],
// or -1 when it never ends.
func valueEnd(doc []byte, i int) int {
	if i >= len(doc) {
		return -1
	}
	switch doc[i] {
	case '"':
		return stringEnd(doc, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				if j = stringEnd(doc, j); j < 0 {
					return -1
				}
				j-- // the loop's j++ steps past the string
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to a delimiter.
	j := i
	for j < len(doc) {
		switch doc[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}
