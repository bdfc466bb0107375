package databases

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// FuzzParsePort checks that parsePort accepts exactly the decimal TCP
// ports, 1 to 65535, and returns the number it read.
func FuzzParsePort(f *testing.F) {
	for _, s := range []string{"5432", "0", "1", "65535", "65536", "-1", "+5432", " 5432", "05432", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		port, err := parsePort(s)
		n, atoiErr := strconv.ParseUint(s, 10, 64)
		valid := atoiErr == nil && n >= 1 && n <= 65535
		if valid != (err == nil) {
			t.Fatalf("parsePort(%q) = %d, %v; want valid=%v", s, port, err, valid)
		}
		if valid && uint64(port) != n {
			t.Fatalf("parsePort(%q) = %d, want %d", s, port, n)
		}
	})
}

// FuzzConnString checks that every password and user name reaches pgx as
// it is, however it is quoted.
func FuzzConnString(f *testing.F) {
	for _, s := range []string{"", "secret", "it's", `back\slash`, "with space", `'\''`, "a=b c=d", "\x00"} {
		f.Add(s, "orders")
	}
	f.Fuzz(func(t *testing.T, password, user string) {
		if strings.ContainsRune(password+user, 0) || !utf8.ValidString(password+user) {
			t.Skip("PostgreSQL takes no NUL, and pgx only UTF-8")
		}
		p := Postgres{Host: "127.0.0.1", Port: 5432, User: user, Password: password, Database: "postgres"}
		cfg, err := pgconn.ParseConfig(p.connString())
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", p.connString(), err)
		}
		if user != "" && cfg.User != user {
			t.Fatalf("user %q arrived as %q", user, cfg.User)
		}
		if password != "" && cfg.Password != password {
			t.Fatalf("password %q arrived as %q", password, cfg.Password)
		}
	})
}
