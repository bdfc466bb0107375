package image_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// TestDocumentedSteps runs the shell steps the README's "Images" section
// and docs/controller-runtime.md's deploying section show, each block
// from an empty kind cluster, against the files they name: make's targets
// and what their recipes write, the kustomizations kubectl applies (with
// what `make webhook-certs` writes, run for real). Every Deployment an
// apply creates must find each Secret it mounts or reads, and its
// namespace, created by then (else its pods wait in ContainerCreating),
// and, on kind, its image loaded from an archive a step wrote.
func TestDocumentedSteps(t *testing.T) {
	docs := []struct{ file, heading string }{
		{"README.md", "## Images"},
		{"docs/controller-runtime.md", "## 9. Deploying"},
	}
	for _, doc := range docs {
		t.Run(doc.file, func(t *testing.T) {
			blocks := shellBlocks(t, filepath.Join(repoRoot, doc.file), doc.heading)
			require.NotEmpty(t, blocks, "%s: no sh block under %q", doc.file, doc.heading)
			applied := 0
			for i, steps := range blocks {
				w := newWorld(t)
				for _, step := range steps {
					require.NoError(t, w.run(step), "%s, block %d: %s", doc.file, i+1, step)
				}
				applied += w.applies
			}
			require.Positive(t, applied, "%s: the steps apply something", doc.file)
		})
	}
}

// TestDocumentedStepsCatch shows the checks fail where a user would be
// stuck: an apply of the operator's own kustomization, whose Deployment
// mounts a Secret no step made (the README's steps until this test), a
// file no step wrote, an image no step loaded, a Secret in a namespace
// not yet made, and a step the test doesn't know.
func TestDocumentedStepsCatch(t *testing.T) {
	w := newWorld(t)
	require.NoError(t, w.run("make image"))
	require.NoError(t, w.run("kind load image-archive bin/memcached-operator.tar"))
	err := w.run("kubectl apply -k examples/memcached/deploy")
	require.ErrorContains(t, err, "Deployment memcached-system/memcached-controller: the Secret memcached-webhooks-tls it needs is created by no step before")

	w = newWorld(t)
	require.ErrorContains(t, w.run("kind load image-archive bin/memcached-operator.tar"), "bin/memcached-operator.tar: no step wrote it")
	require.ErrorContains(t, w.run("kubectl apply -k bin/memcached-deploy-kind"), "bin/memcached-deploy-kind: no step wrote it")

	w = newWorld(t)
	for _, step := range []string{"make image", "kind load image-archive bin/databases-controller.tar", "make webhook-certs"} {
		require.NoError(t, w.run(step))
	}
	require.ErrorContains(t, w.run("kubectl apply -k bin/memcached-deploy-kind"), "Deployment memcached-system/memcached-controller: the image memcached-operator:dev is loaded into kind by no step")

	w = newWorld(t)
	require.ErrorContains(t, w.run("kubectl -n databases-system create secret generic postgres-admin --from-literal=password=x"), "the namespace databases-system: not created")
	require.ErrorContains(t, w.run("make deploy"), "make deploy: no such target")
	require.ErrorContains(t, w.run("helm install x"), "a step this test doesn't know")
}

// world is what the steps have made so far: the files under bin/, and
// the kind cluster's images and objects.
type world struct {
	t *testing.T
	// bin is where bin/ is written, a directory of the test's.
	bin string
	// archives are the image archives written, by their path in the
	// repository, with the tag each holds.
	archives map[string]string
	// written are the other paths written, in the repository, and where
	// they are.
	written map[string]string
	// kind is whether a step loaded an image into kind: a Deployment's
	// image must then be one of loaded.
	kind   bool
	loaded []string
	// objects are the cluster's objects, as kind/namespace/name.
	objects map[string]bool
	// applies counts the applies run.
	applies int
}

func newWorld(t *testing.T) *world {
	return &world{t: t, bin: t.TempDir(), archives: map[string]string{}, written: map[string]string{}, objects: map[string]bool{}}
}

// run runs one step, and returns what is wrong with it.
func (w *world) run(step string) error {
	f := strings.Fields(step)
	switch {
	case len(f) == 2 && f[0] == "make":
		return w.make(f[1])
	case len(f) == 4 && f[0] == "kind" && f[1] == "load" && f[2] == "image-archive":
		tag, ok := w.archives[f[3]]
		if !ok {
			return fmt.Errorf("%s: no step wrote it", f[3])
		}
		w.kind = true
		w.loaded = append(w.loaded, tag)
		return nil
	case len(f) >= 2 && f[0] == "kubectl":
		return w.kubectl(f[1:])
	}
	return fmt.Errorf("a step this test doesn't know: %s", step)
}

// make runs target's recipe as far as the test models it: the lines that
// write images (cmd/image's -tag and -out) and webhookcerts, which it
// runs, writing to the test's bin/.
func (w *world) make(target string) error {
	recipe, err := makeRecipe(filepath.Join(repoRoot, "Makefile"), target)
	if err != nil {
		return err
	}
	tagRE, outRE := regexp.MustCompile(`-tag (\S+)`), regexp.MustCompile(`-out (\S+)`)
	for _, line := range recipe {
		dir := repoRoot
		if rest, ok := strings.CutPrefix(line, "cd "); ok {
			sub, cmd, _ := strings.Cut(rest, " && ")
			dir, line = filepath.Join(repoRoot, sub), cmd
		}
		out := outRE.FindStringSubmatch(line)
		switch {
		case strings.Contains(line, "bin/image ") && out != nil:
			tag := tagRE.FindStringSubmatch(line)
			if tag == nil {
				return fmt.Errorf("make %s: %s: no -tag", target, line)
			}
			w.archives[w.rel(dir, out[1])] = tag[1]
		case strings.Contains(line, "./cmd/webhookcerts") && out != nil:
			rel := w.rel(dir, out[1])
			dest := filepath.Join(w.bin, strings.TrimPrefix(rel, "bin/"))
			args := strings.Fields(strings.Replace(line, out[0], "-out "+dest, 1))
			require.Equal(w.t, []string{"go", "run"}, args[:2], "make %s: %s", target, line)
			cmd := exec.CommandContext(w.t.Context(), args[0], args[1:]...)
			cmd.Dir = dir
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("make %s: %s: %w: %s", target, line, err, b)
			}
			w.written[rel] = dest
		}
	}
	return nil
}

// rel returns path, relative to dir, as a path in the repository; one
// outside bin/ fails the test, as no recipe writes there.
func (w *world) rel(dir, path string) string {
	rel, err := filepath.Rel(repoRoot, filepath.Join(dir, path))
	require.NoError(w.t, err)
	rel = filepath.ToSlash(rel)
	require.True(w.t, strings.HasPrefix(rel, "bin/"), "a recipe writes %s, outside bin/", rel)
	return rel
}

// kubectl runs the kubectl steps the test models: apply -k, create
// namespace, create secret.
func (w *world) kubectl(args []string) error {
	ns := ""
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "-n" || a == "--namespace") && i+1 < len(args):
			ns = args[i+1]
			i++
		case strings.HasPrefix(a, "--namespace="):
			ns = strings.TrimPrefix(a, "--namespace=")
		default:
			rest = append(rest, a)
		}
	}
	switch {
	case len(rest) == 3 && rest[0] == "apply" && rest[1] == "-k":
		return w.apply(rest[2])
	case len(rest) == 3 && rest[0] == "create" && (rest[1] == "namespace" || rest[1] == "ns"):
		w.objects["Namespace//"+rest[2]] = true
		return nil
	case len(rest) >= 4 && rest[0] == "create" && rest[1] == "secret":
		if ns == "" {
			ns = "default"
		}
		if ns != "default" && !w.objects["Namespace//"+ns] {
			return fmt.Errorf("the namespace %s: not created", ns)
		}
		w.objects["Secret/"+ns+"/"+rest[3]] = true
		return nil
	}
	return fmt.Errorf("a step this test doesn't know: kubectl %s", strings.Join(args, " "))
}

// apply applies the kustomization dir, and checks its Deployments.
func (w *world) apply(dir string) error {
	path := filepath.Join(repoRoot, dir)
	if written, ok := w.written[strings.TrimSuffix(dir, "/")]; ok {
		path = written
	} else if strings.HasPrefix(dir, "bin/") {
		return fmt.Errorf("%s: no step wrote it", dir)
	}
	objs, err := kustomize(path)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	w.applies++
	var deployments []appsv1.Deployment
	for _, o := range objs {
		w.objects[o.key()] = true
		if o.Kind == "Certificate" && strings.HasPrefix(o.APIVersion, "cert-manager.io/") {
			// cert-manager writes the Secret it names.
			w.objects["Secret/"+o.Metadata.Namespace+"/"+o.Spec.SecretName] = true
		}
		if o.Kind == "Deployment" {
			var d appsv1.Deployment
			if err := sigsyaml.Unmarshal(o.raw, &d); err != nil {
				return fmt.Errorf("%s: %w", o.key(), err)
			}
			deployments = append(deployments, d)
		}
	}
	var errs []error
	for _, o := range objs {
		if ns := o.Metadata.Namespace; ns != "" && ns != "default" && !w.objects["Namespace//"+ns] {
			errs = append(errs, fmt.Errorf("%s: the namespace %s is created by no step", o.key(), ns))
		}
	}
	for _, d := range deployments {
		name := "Deployment " + d.Namespace + "/" + d.Name
		for _, s := range secretsOf(d) {
			if !w.objects["Secret/"+d.Namespace+"/"+s] {
				errs = append(errs, fmt.Errorf("%s: the Secret %s it needs is created by no step before: its pods would wait in ContainerCreating", name, s))
			}
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if w.kind && !slices.Contains(w.loaded, c.Image) {
				errs = append(errs, fmt.Errorf("%s: the image %s is loaded into kind by no step (loaded: %v)", name, c.Image, w.loaded))
			}
		}
	}
	return errors.Join(errs...)
}

// secretsOf returns the Secrets d's pods need to start: those its
// volumes mount and its containers read, unless optional.
func secretsOf(d appsv1.Deployment) []string {
	var names []string
	pod := d.Spec.Template.Spec
	for _, v := range pod.Volumes {
		if s := v.Secret; s != nil && (s.Optional == nil || !*s.Optional) {
			names = append(names, s.SecretName)
		}
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && (e.ValueFrom.SecretKeyRef.Optional == nil || !*e.ValueFrom.SecretKeyRef.Optional) {
				names = append(names, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && (e.SecretRef.Optional == nil || !*e.SecretRef.Optional) {
				names = append(names, e.SecretRef.Name)
			}
		}
	}
	return names
}

// object is what the test reads of a manifest.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		// SecretName is a cert-manager Certificate's.
		SecretName string `json:"secretName"`
	} `json:"spec"`
	raw []byte
}

func (o object) key() string { return o.Kind + "/" + o.Metadata.Namespace + "/" + o.Metadata.Name }

// kustomization is what the test models of a kustomization.yaml; a field
// it doesn't know fails the test rather than go unchecked.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
	Patches []struct {
		Patch  string `json:"patch"`
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
	} `json:"patches"`
}

// kustomize returns the objects the kustomization in dir applies: its
// resources, files and directories, with its images' names set. Patches
// are allowed where they can't change what a pod needs (not on a
// workload), and left out.
func kustomize(dir string) ([]object, error) {
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k kustomization
	if err := sigsyaml.UnmarshalStrict(b, &k); err != nil {
		return nil, fmt.Errorf("kustomization.yaml, as far as this test models one: %w", err)
	}
	for _, p := range k.Patches {
		if slices.Contains([]string{"Deployment", "StatefulSet", "DaemonSet", "Pod", "Job", ""}, p.Target.Kind) {
			return nil, fmt.Errorf("a patch of %q, which this test doesn't apply", p.Target.Kind)
		}
	}
	var objs []object
	for _, r := range k.Resources {
		path := filepath.Join(dir, r)
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if fi.IsDir() {
			sub, err := kustomize(path)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r, err)
			}
			objs = append(objs, sub...)
			continue
		}
		docs, err := manifests(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
		objs = append(objs, docs...)
	}
	for i, o := range objs {
		if o.Kind != "Deployment" || len(k.Images) == 0 {
			continue
		}
		var d appsv1.Deployment
		if err := sigsyaml.Unmarshal(o.raw, &d); err != nil {
			return nil, err
		}
		for j, c := range d.Spec.Template.Spec.Containers {
			for _, im := range k.Images {
				if repo, _, _ := strings.Cut(c.Image, ":"); repo == im.Name {
					d.Spec.Template.Spec.Containers[j].Image = im.NewName + ":" + im.NewTag
				}
			}
		}
		if objs[i].raw, err = sigsyaml.Marshal(d); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// manifests returns the objects of the YAML file path.
func manifests(path string) ([]object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := yaml.NewYAMLReader(bufio.NewReader(f))
	var objs []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var o object
		if err := sigsyaml.Unmarshal(doc, &o); err != nil {
			return nil, err
		}
		if o.Kind == "" {
			continue // a document of comments alone
		}
		o.raw = doc
		objs = append(objs, o)
	}
}

// makeRecipe returns target's recipe in the Makefile path: its lines,
// continuations joined, or an error if there is no such target.
func makeRecipe(path, target string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, target+":") })
	if start < 0 {
		return nil, fmt.Errorf("make %s: no such target in the Makefile", target)
	}
	var recipe []string
	var cont strings.Builder
	for _, l := range lines[start+1:] {
		if !strings.HasPrefix(l, "\t") && cont.Len() == 0 {
			break
		}
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutSuffix(l, `\`); ok {
			cont.WriteString(rest + " ")
			continue
		}
		cont.WriteString(l)
		recipe = append(recipe, cont.String())
		cont.Reset()
	}
	return recipe, nil
}

// shellBlocks returns the steps of each ```sh block in the section of
// path under heading, up to the next heading of its level: one step a
// line, continuations joined, comments dropped.
func shellBlocks(t *testing.T, path, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	level := heading[:strings.Index(heading, " ")+1]
	var blocks [][]string
	var in, block bool
	var steps []string
	var cont strings.Builder
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case !block && strings.HasPrefix(line, heading):
			in = true
		case in && !block && strings.HasPrefix(line, level):
			in = false
		case in && !block && line == "```sh":
			block, steps = true, nil
		case in && block && line == "```":
			block = false
			blocks = append(blocks, steps)
		case in && block:
			l := strings.TrimSpace(line)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if rest, ok := strings.CutSuffix(l, `\`); ok {
				cont.WriteString(rest + " ")
				continue
			}
			cont.WriteString(l)
			steps = append(steps, cont.String())
			cont.Reset()
		}
	}
	return blocks
}
