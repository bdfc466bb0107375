package image_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// TestDeployWritableTmp requires that each example's Deployment whose
// container has a read-only root filesystem mounts an emptyDir at /tmp:
// the image's /tmp (mode 1777, as distroless/static's) is then read-only
// too, and what writes a temporary file, such as os.CreateTemp, fails
// without one.
func TestDeployWritableTmp(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(op.dir, "deploy", "deployment.yaml"))
			require.NoError(t, err)
			var d appsv1.Deployment
			require.NoError(t, sigsyaml.UnmarshalStrict(b, &d))
			pod := d.Spec.Template.Spec
			emptyDirs := map[string]bool{}
			for _, v := range pod.Volumes {
				if v.EmptyDir != nil {
					emptyDirs[v.Name] = true
				}
			}
			require.NotEmpty(t, pod.Containers)
			for _, c := range pod.Containers {
				sc := c.SecurityContext
				require.True(t, sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem,
					"container %s runs with a read-only root filesystem", c.Name)
				var tmp bool
				for _, m := range c.VolumeMounts {
					if m.MountPath == "/tmp" {
						require.True(t, emptyDirs[m.Name], "container %s: /tmp is the volume %s, which is no emptyDir", c.Name, m.Name)
						require.False(t, m.ReadOnly, "container %s: /tmp is mounted read-only", c.Name)
						tmp = true
					}
				}
				require.True(t, tmp, "container %s: no emptyDir at /tmp under readOnlyRootFilesystem", c.Name)
			}
		})
	}
}
