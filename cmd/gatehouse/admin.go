package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/term"

	"github.com/gatehouse-dev/gatehouse/config"
	"github.com/gatehouse-dev/gatehouse/store"
)

func checkConfig(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", os.Getenv("GATEHOUSE_CONFIG"), "config file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// The file may be named as the argument; a file named there wins over
	// GATEHOUSE_CONFIG. Any other argument is refused: ignored, it would
	// leave check-config saying ok about a file it never read.
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "config" })
	switch {
	case fs.NArg() > 1:
		fmt.Fprintf(stderr, "gatehouse check-config: %d arguments: check one config file at a time (unexpected %q)\n", fs.NArg(), fs.Arg(1))
		return 2
	case fs.NArg() == 1 && given:
		fmt.Fprintf(stderr, "gatehouse check-config: unexpected argument %q: the file is named with --config (%s)\n", fs.Arg(0), *path)
		return 2
	case fs.NArg() == 1:
		*path = fs.Arg(0)
	}
	cfg, err := config.Load(*path)
	if err != nil {
		var errs config.Errors
		n := 1
		if errors.As(err, &errs) {
			n = len(errs)
		}
		fmt.Fprintf(stderr, "%s: %d problem(s):\n%s\n", cmp.Or(*path, "built-in config"), n, indent(err))
		return 1
	}
	for _, w := range startWarnings(cfg) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "%s: ok\n", cmp.Or(*path, "built-in config"))
	return 0
}

func migrate(args []string, stdout, stderr io.Writer) int {
	cfg, _, ok := loadConfig("migrate", args, stderr)
	if !ok {
		return 2
	}
	db, err := store.Open(context.Background(), store.Options{Driver: cfg.Database.Driver, DSN: cfg.Database.DSN, Migrate: true,
		Logger: newLogger(cfg.Log, stderr)})
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse migrate: %v\n", err)
		return 1
	}
	defer db.Close()
	fmt.Fprintf(stdout, "database schema at version %d\n", store.SchemaVersion())
	return 0
}

// user add NAME --role ROLE [--password-stdin] prints config lines with a
// bcrypt hash; the password never touches the config in the clear.
func user(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "add" {
		fmt.Fprintln(stderr, "usage: gatehouse user add NAME --role auditor|approver|admin [--password-stdin]")
		return 2
	}
	name := args[1]
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "", "auditor, approver or admin")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	switch *role {
	case config.RoleAuditor, config.RoleApprover, config.RoleAdmin:
	default:
		fmt.Fprintf(stderr, "gatehouse user add: --role must be auditor, approver or admin (got %q)\n", *role)
		return 2
	}
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, " \t\n:\"") {
		fmt.Fprintf(stderr, "gatehouse user add: %q is not a usable user name\n", name)
		return 2
	}
	pw, err := readPassword(stdin, stderr, *fromStdin)
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse user add: %v\n", err)
		return 1
	}
	if len(pw) < 8 {
		fmt.Fprintln(stderr, "gatehouse user add: the password must have at least 8 characters")
		return 1
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse user add: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "# add under auth.users:\n  - name: %s\n    password_bcrypt: %q\n    role: %s\n", name, string(hash), *role)
	return 0
}

func readPassword(stdin io.Reader, stderr io.Writer, fromStdin bool) (string, error) {
	if f, ok := stdin.(*os.File); ok && !fromStdin && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(stderr, "Password: ")
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		fmt.Fprint(stderr, "Again: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", err
		}
		if string(a) != string(b) {
			return "", errors.New("the passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
