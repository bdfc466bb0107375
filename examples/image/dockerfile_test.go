package image_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/image"
)

// TestDockerfiles parses each example's Dockerfile and requires that its
// last stage builds what make image builds: distroless/static's files
// (what make image's base copies), the binary copied owned by 65532 to
// the entrypoint's path, the same user, working directory and
// entrypoint, in exec form (a shell form needs /bin/sh, which the image
// has not); that both bases are pinned by digest; that its build stage
// runs on the builder's platform and cross-compiles the operator's
// package, static, for the target's; and that a Dockerfile.dockerignore
// beside it lets only the Go modules' sources into the context.
func TestDockerfiles(t *testing.T) {
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			df := parseDockerfile(t, filepath.Join(op.dir, "Dockerfile"))
			require.GreaterOrEqual(t, len(df.stages), 2, "a build stage and the image's")
			build, final := df.stages[len(df.stages)-2], df.stages[len(df.stages)-1]

			images, err := image.Build(image.Spec{Name: op.name, Tag: op.tag, Binaries: [][]byte{fakeELF(elf.EM_X86_64, "")}})
			require.NoError(t, err)
			cfg, err := images.ByArch["amd64"].ConfigFile()
			require.NoError(t, err)

			for _, s := range df.stages {
				require.Regexp(t, pinned, s.from, "every base pinned by digest, its tag saying what it is")
			}
			require.True(t, strings.HasPrefix(final.from, "gcr.io/distroless/static-"), "the image's base is distroless/static, whose files make image copies: %s", final.from)
			require.Contains(t, final.from, ":nonroot@", "the nonroot variant, user 65532")
			require.Empty(t, final.platform, "the image's stage is the target platform's")
			require.Empty(t, final.others, "nothing in the image's config that make image's has not")
			require.Equal(t, cfg.Config.User, final.user)
			require.Equal(t, cfg.Config.WorkingDir, final.workdir)
			require.Equal(t, cfg.Config.Entrypoint, final.entrypoint, "ENTRYPOINT in exec form, as make image's")
			require.Len(t, final.copies, 1, "one COPY: the binary")
			cp := final.copies[0]
			require.Equal(t, build.name, cp.from, "the binary comes from the build stage")
			require.Equal(t, cfg.Config.User, cp.chown)
			require.Equal(t, cfg.Config.Entrypoint[0], cp.dest)
			require.Equal(t, "/out/"+op.name, cp.src)

			require.Equal(t, "$BUILDPLATFORM", build.platform, "the build stage runs on the builder's platform and cross-compiles")
			require.Subset(t, build.args, []string{"TARGETOS", "TARGETARCH"}, "the target's platform, which BuildKit sets")
			require.Len(t, build.runs, 1)
			run := build.runs[0]
			for _, want := range []string{"CGO_ENABLED=0", "GOOS=$TARGETOS", "GOARCH=$TARGETARCH", "go build", "-trimpath", "-o /out/" + op.name + " " + op.pkg} {
				require.Contains(t, run, want)
			}

			ignore := readIgnore(t, filepath.Join(op.dir, "Dockerfile.dockerignore"))
			require.NotEmpty(t, ignore)
			require.Equal(t, "**", ignore[0], "everything is left out, then what go build reads let in")
			for _, p := range ignore[1:] {
				if rest, ok := strings.CutPrefix(p, "!"); ok {
					require.True(t, strings.HasSuffix(rest, "go.mod") || strings.HasSuffix(rest, "go.sum") || strings.HasSuffix(rest, ".go"), "only Go sources let in: %s", p)
				}
			}
		})
	}
}

// readIgnore returns path's patterns, without comments and blank lines.
func readIgnore(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "a .dockerignore for the Dockerfile, whose context is the repository's root")
	var patterns []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns
}

// dockerfile is what the test reads of a Dockerfile: its stages.
type dockerfile struct {
	stages []stage
}

// stage is one FROM of a Dockerfile and what follows it.
type stage struct {
	from, name string
	// platform is FROM's --platform.
	platform string
	// args are the ARGs the stage declares.
	args          []string
	user, workdir string
	entrypoint    []string
	copies        []copyInstruction
	runs          []string
	// others are the instructions the test compares with nothing: the
	// image's stage must have none, as make image's config has none of
	// what they set.
	others []string
}

// copyInstruction is a COPY: its --from and --chown, one source and the
// destination.
type copyInstruction struct {
	from, chown, src, dest string
}

// parseDockerfile reads path's instructions, with their line
// continuations joined and comments dropped: a line parser enough for the
// examples' Dockerfiles, which fails the test on what it doesn't know.
func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	var cont strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cont.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cont.WriteString(rest + " ")
			continue
		}
		cont.WriteString(line)
		lines = append(lines, cont.String())
		cont.Reset()
	}
	require.NoError(t, sc.Err())
	require.Zero(t, cont.Len(), "%s ends in a continuation", path)

	var df dockerfile
	for _, line := range lines {
		instr, args, _ := strings.Cut(line, " ")
		args = strings.TrimSpace(args)
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			f := strings.Fields(args)
			var platform string
			if p, ok := strings.CutPrefix(f[0], "--platform="); ok {
				platform, f = p, f[1:]
			}
			require.NotEmpty(t, f, "%s: FROM with no image", path)
			require.False(t, strings.HasPrefix(f[0], "--"), "%s: FROM flag %s: unknown to this parser", path, f[0])
			s := stage{from: f[0], platform: platform}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			df.stages = append(df.stages, s)
			continue
		}
		require.NotEmpty(t, df.stages, "%s: %s before any FROM", path, instr)
		s := &df.stages[len(df.stages)-1]
		switch instr {
		case "USER":
			s.user = args
		case "WORKDIR":
			s.workdir = args
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(args), &s.entrypoint), "%s: ENTRYPOINT %s is not in exec form: a JSON array", path, args)
		case "RUN":
			s.runs = append(s.runs, args)
		case "ARG":
			s.args = append(s.args, strings.Fields(args)...)
		case "COPY":
			var c copyInstruction
			var paths []string
			for _, f := range strings.Fields(args) {
				switch {
				case strings.HasPrefix(f, "--from="):
					c.from = strings.TrimPrefix(f, "--from=")
				case strings.HasPrefix(f, "--chown="):
					c.chown = strings.TrimPrefix(f, "--chown=")
				case strings.HasPrefix(f, "--"):
					t.Fatalf("%s: COPY flag %s: unknown to this parser", path, f)
				default:
					paths = append(paths, f)
				}
			}
			if len(paths) == 2 {
				c.src, c.dest = paths[0], paths[1]
			}
			s.copies = append(s.copies, c)
		case "CMD", "ENV", "SHELL", "LABEL", "EXPOSE", "VOLUME", "ADD", "ONBUILD", "HEALTHCHECK", "STOPSIGNAL":
			s.others = append(s.others, line)
		default:
			t.Fatalf("%s: instruction %s: unknown to this parser", path, instr)
		}
	}
	return df
}
