package app

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
)

// log emits one of the runtime's own records through the Setup's
// LoggerProvider, with err, if any, as its exception.
func (l *lifecycle) log(ctx context.Context, sev log.Severity, body string, err error, attrs ...attribute.KeyValue) {
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(sev)
	r.SetSeverityText(sev.String())
	r.SetBody(attribute.StringValue(body))
	if err != nil {
		r.SetErr(err)
		r.AddAttributes(attrExcMessage.String(err.Error()))
	}
	r.AddAttributes(attrs...)
	l.logger.Emit(ctx, r)
}

// logError emits an ERROR record.
func (l *lifecycle) logError(ctx context.Context, body string, err error, attrs ...attribute.KeyValue) {
	l.log(ctx, log.SeverityError, body, err, attrs...)
}

// logPanic emits an ERROR record for a recovered panic, with its value and
// the stack it was raised on.
func (l *lifecycle) logPanic(ctx context.Context, body string, p *panicError, attrs ...attribute.KeyValue) {
	attrs = append(attrs,
		attrExcType.String(fmt.Sprintf("%T", p.value)),
		attrExcMessage.String(fmt.Sprint(p.value)),
		attrExcStack.String(string(p.stack)),
	)
	l.log(ctx, log.SeverityError, body, nil, attrs...)
}

// panicError is a panic recovered from the App's own code: its value and
// the stack of the goroutine that panicked.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// Unwrap returns the panic's value when it is an error, so errors.Is sees
// through the panic.
func (p *panicError) Unwrap() error {
	err, _ := p.value.(error)
	return err
}

// recovered calls f, turning a panic into a *panicError.
func recovered(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return f()
}
