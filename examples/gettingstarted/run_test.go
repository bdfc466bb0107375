package gettingstarted

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/internal/lockedbuffer"
)

// kubectlMissing is the failure of a machine without kubectl: the test
// fails rather than skip the page's steps.
const kubectlMissing = "the page's test runs kubectl, which is not on PATH: install kubectl 1.24 or later (kubectl create token): https://kubernetes.io/docs/tasks/tools/"

// The two go run commands of the page, and the package each builds.
const (
	goRunKubetest = "go run github.com/loam-dev/loam/kubetest/cmd/kubetest"
	goRunWebsite  = "go run ./cmd/website"
)

// numbered matches the "# N" comment that numbers a line of the page's
// commands.
var numbered = regexp.MustCompile(`#\s*(\d+)\b`)

// patchCommand is the kubectl patch the page gives in its prose, which
// may wrap over two lines.
var patchCommand = regexp.MustCompile("`(kubectl -n website patch [^`]+)`")

// numberedCommands returns the page's command lines by their number.
func numberedCommands(t *testing.T, lines []string) map[int]string {
	t.Helper()
	byNumber := map[int]string{}
	for _, l := range lines {
		if m := numbered.FindStringSubmatch(l); m != nil {
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			byNumber[n] = l
		}
	}
	return byNumber
}

// driveCommands returns the lines of the sh block that follows the
// page's hello.yaml, the kubectl steps that drive the operator.
func driveCommands(t *testing.T, text string) []string {
	t.Helper()
	return shLinesAfter(t, text, "<!-- file: hello.yaml -->")
}

// lineRunning returns the one line that contains want, failing when
// none or several do.
func lineRunning(t *testing.T, lines []string, want string) string {
	t.Helper()
	var found []string
	for _, l := range lines {
		if strings.Contains(l, want) {
			found = append(found, l)
		}
	}
	require.Len(t, found, 1, "%s: one of %q runs %q", page, lines, want)
	return found[0]
}

// runAsUser runs the page's commands 7 to 10 and its kubectl steps in
// dir, as a user's shell would, with the page's go runs replaced by the
// binaries `go build` makes of the same packages. It checks what the page
// says they show, that the operator, run as its ServiceAccount, is
// refused nothing, and that it exits 0 on SIGTERM, its Lease released.
func runAsUser(t *testing.T, text string, cmds []string, root, dir string) {
	byNumber := numberedCommands(t, cmds)
	for n := 7; n <= 10; n++ {
		require.Contains(t, byNumber, n, "%s has no command %d", page, n)
	}
	require.Contains(t, byNumber[7], goRunKubetest, "%s: command 7 runs kubetest's command", page)
	require.Contains(t, byNumber[10], goRunWebsite, "%s: command 10 runs the operator", page)

	// What the two go runs build, built once: the packages come from the
	// build cache that make test's flags filled, so only the links are new.
	started := time.Now()
	bin := filepath.Join(root, "bin")
	run(t, dir, "go", "build", "-ldflags=-w", "-o", bin+string(filepath.Separator),
		"github.com/loam-dev/loam/kubetest/cmd/kubetest", "./cmd/website")
	replace := strings.NewReplacer(goRunKubetest, filepath.Join(bin, "kubetest"), goRunWebsite, filepath.Join(bin, "website"))

	built := time.Now()
	sh := newShell(t, dir)
	kubetest := sh.start(t, replace.Replace(byNumber[7]))
	waitReady(t, sh, kubetest, filepath.Join(dir, "admin.kubeconfig"))
	sh.run(t, byNumber[8])
	sh.run(t, byNumber[9])
	operator := sh.start(t, replace.Replace(byNumber[10]))
	refused := func() string {
		if lines := forbidden(operator.stderr()); lines != "" {
			return "the operator, as its ServiceAccount, was refused a request rbac.yaml doesn't allow:\n" + lines
		}
		return ""
	}

	drive := driveCommands(t, text)
	sh.run(t, lineRunning(t, drive, "kubectl apply -f hello.yaml"))
	// The page's get shows the status once the operator reconciled the
	// Website: wait for that, failing at once on a refused request.
	eventually(t, operator, refused, "the operator applies the Website's status", func() bool {
		return sh.try("kubectl -n website get website hello -o jsonpath='{.status.readyReplicas}'") == "0"
	})

	get := sh.run(t, lineRunning(t, drive, "get websites"))
	require.Equal(t, "2", column(get, "website.example.com/hello", "REPLICAS"), "kubectl get's REPLICAS:\n%s", get)
	require.Equal(t, "0", column(get, "website.example.com/hello", "READY"), "kubectl get's READY:\n%s", get)
	require.Contains(t, get, "deployment.apps/hello", "kubectl get lists the Deployment the operator applied")
	describe := sh.run(t, lineRunning(t, drive, "describe website hello"))
	for _, want := range []string{"Image:", "nginx:1.29", "Replicas:", "Ready Replicas:"} {
		require.Contains(t, describe, want, "kubectl describe shows the Website's spec and status")
	}
	owner := sh.run(t, lineRunning(t, drive, "jsonpath="))
	require.Equal(t, "Website/hello website-operator", strings.TrimSpace(owner), "the Deployment's owner and field manager")

	m := patchCommand.FindStringSubmatch(text)
	require.NotNil(t, m, "%s gives no kubectl patch of the Website", page)
	sh.run(t, strings.Join(strings.Fields(m[1]), " "))
	eventually(t, operator, refused, "the Deployment follows the patch to 3 replicas", func() bool {
		return sh.try("kubectl -n website get deployment hello -o jsonpath='{.spec.replicas}'") == "3"
	})

	require.Empty(t, refused(), "its whole stderr:\n%s", operator.stderr())
	code, err := operator.stop(30 * time.Second)
	require.NoError(t, err, "the operator stops on SIGTERM:\n%s", operator.stderr())
	require.Equal(t, 0, code, "the operator exits 0 on SIGTERM (Ctrl-C):\n%s", operator.stderr())
	holder := sh.run(t, "kubectl -n website get lease website-operator -o jsonpath='{.spec.holderIdentity}'")
	require.Empty(t, holder, "the operator releases its Lease as it stops, so the next one starts at once")
	t.Logf("commands 7 to 10 and the kubectl steps: %s, of which %s building the two binaries",
		time.Since(started).Round(time.Millisecond), built.Sub(started).Round(time.Millisecond))
}

// forbidden returns the lines of output that name a refused request.
func forbidden(output string) string {
	var b strings.Builder
	for l := range strings.Lines(output) {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// column returns the value in the column named header of the row whose
// first field is name, in kubectl get's tables; "" when there is none.
func column(table, name, header string) string {
	var headers []string
	for l := range strings.Lines(table) {
		fields := strings.Fields(l)
		switch {
		case len(fields) > 0 && fields[0] == "NAME":
			headers = fields
		case len(fields) == len(headers) && fields[0] == name:
			for i, h := range headers {
				if h == header {
					return fields[i]
				}
			}
		}
	}
	return ""
}

// waitReady waits, as the page tells the user to, until kubetest has
// written its kubeconfig and its API server answers /readyz.
func waitReady(t *testing.T, sh *shell, kubetest *process, kubeconfig string) {
	t.Helper()
	eventually(t, kubetest, func() string { return "" }, "kubetest writes its kubeconfig and is ready", func() bool {
		if _, err := os.Stat(kubeconfig); err != nil {
			return false
		}
		return sh.try("kubectl --kubeconfig "+kubeconfig+" get --raw /readyz") == "ok"
	})
}

// eventually polls cond for up to a minute. It fails at once when p
// exits or fail returns something, and with p's output on a timeout.
func eventually(t *testing.T, p *process, fail func() string, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if cond() {
			return
		}
		if s := fail(); s != "" {
			require.FailNow(t, what, "%s\nits whole stderr:\n%s", s, p.stderr())
		}
		select {
		case <-p.done:
			require.FailNow(t, what, "%s exited: %v\n%s%s", p.line, p.err, p.stdout(), p.stderr())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			require.FailNow(t, what, "not within a minute; %s wrote:\n%s%s", p.line, p.stdout(), p.stderr())
		}
	}
}

// shell runs the page's lines with sh in one directory, carrying the
// environment each line exports to the next, as a user's shell does.
type shell struct {
	dir string
	env []string
}

// newShell returns a shell in dir with the test's environment, offline
// and with make test's flags; a KUBECONFIG of the machine's is dropped,
// since the page sets its own.
func newShell(t *testing.T, dir string) *shell {
	t.Helper()
	_, err := exec.LookPath("kubectl")
	require.NoError(t, err, kubectlMissing)
	base := exec.Command("sh")
	base.Dir = dir // Environ sets PWD to it, as a shell in dir has it
	var env []string
	for _, kv := range base.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "KUBECONFIG" {
			env = append(env, kv)
		}
	}
	env = append(env, "GOPROXY=off", "GOWORK=off", "GOFLAGS=-buildvcs=false -trimpath")
	return &shell{dir: dir, env: env}
}

// command returns sh running script in the shell's directory and
// environment, in a process group of its own, killed when ctx ends.
func (s *shell) command(ctx context.Context, script string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// run runs line, fails the test with its output when it fails, keeps
// the environment it leaves, and returns its standard output.
func (s *shell) run(t *testing.T, line string) string {
	t.Helper()
	envFile, err := os.CreateTemp(t.TempDir(), "env")
	require.NoError(t, err)
	defer func() { _ = envFile.Close() }()
	// The line's status is the script's; the environment it leaves goes
	// to fd 3 either way.
	cmd := s.command(t.Context(), line+"\nstatus=$?\nenv -0 >&3\nexit $status")
	cmd.ExtraFiles = []*os.File{envFile}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s in %s:\n%s%s", line, s.dir, stdout.String(), stderr.String())
	env, err := os.ReadFile(envFile.Name())
	require.NoError(t, err)
	s.env = strings.Split(strings.TrimSuffix(string(env), "\x00"), "\x00")
	return stdout.String()
}

// try runs line and returns its trimmed standard output, or "" when it
// fails or takes over ten seconds: a poll's probe.
func (s *shell) try(line string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := s.command(ctx, line).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// start runs line, which ends in & as the page's background commands
// do, and returns the process it puts in the background. The test's
// cleanup stops it: SIGTERM, then SIGKILL after ten seconds.
func (s *shell) start(t *testing.T, line string) *process {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = r.Close() }()
	// sh waits for the background process and exits with its status;
	// $! is that process, since sh forks and execs a simple command.
	// Not the test's context, which ends before the cleanup below can
	// stop the process gracefully.
	cmd := s.command(context.Background(), line+"\necho $! >&3\nexec 3>&-\nwait $!")
	cmd.ExtraFiles = []*os.File{w}
	p := &process{line: line, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.errOut
	err = cmd.Start()
	_ = w.Close()
	require.NoError(t, err, line)
	go func() { // owned by p: it ends when sh does, which the cleanup makes sure of
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.pid <= 0 { // sh never said which process it started
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			return
		}
		if _, err := p.stop(10 * time.Second); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	pid, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err, "%s: sh gave no pid:\n%s", line, p.stderr())
	p.pid, err = strconv.Atoi(strings.TrimSpace(pid))
	require.NoError(t, err)
	return p
}

// process is a command of the page run in the background.
type process struct {
	line        string
	pid         int
	out, errOut lockedbuffer.Buffer
	done        chan struct{}
	err         error // sh's exit, once done is closed
}

func (p *process) stdout() string { return p.out.String() }
func (p *process) stderr() string { return p.errOut.String() }

// stop sends SIGTERM to the process and returns its exit code once it
// exits; it fails when the process is still running after grace.
func (p *process) stop(grace time.Duration) (int, error) {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			return -1, errors.New(p.line + ": still running " + grace.String() + " after SIGTERM")
		}
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, p.err
}
