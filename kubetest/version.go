package kubetest

import (
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
)

// effectiveVersion is the version a component reports: the build's, as
// kube-apiserver's command uses, but with the release of k8s.io/kubernetes
// this binary was built from as its gitVersion. Without it /version says
// v0.0.0-master+$Format:%H$, which kubectl version and other clients that
// parse it as semver reject; the real binaries get theirs from -ldflags.
func effectiveVersion() basecompatibility.MutableEffectiveVersion {
	build := compatibility.DefaultBuildEffectiveVersion()
	release := kubernetesRelease()
	if release == "" || !strings.HasPrefix(baseversion.Get().GitVersion, "v0.0.0") {
		return build // unknown release, or the builder set the version with -ldflags
	}
	return releaseVersion{MutableEffectiveVersion: build, gitVersion: release}
}

// kubernetesRelease returns the version of the k8s.io/kubernetes module
// linked into this binary, or "" if the build information does not say.
func kubernetesRelease() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, dep := range info.Deps {
		if dep.Path != "k8s.io/kubernetes" {
			continue
		}
		if dep.Replace != nil {
			dep = dep.Replace
		}
		if strings.HasPrefix(dep.Version, "v1.") {
			return dep.Version
		}
	}
	return ""
}

// releaseVersion reports gitVersion in /version.
type releaseVersion struct {
	basecompatibility.MutableEffectiveVersion
	gitVersion string
}

func (v releaseVersion) Info() *apimachineryversion.Info {
	info := v.MutableEffectiveVersion.Info()
	if info != nil {
		info.GitVersion = v.gitVersion
	}
	return info
}

// registerDefaultGlobals registers in component-base's process-wide
// registry of component versions what kube-apiserver's and
// kube-controller-manager's options register there when it has nothing
// for "kube" yet: the build's version and the process's feature gate.
// Their options look and register in two steps, so two clusters starting
// at once could both find nothing, and the second registration would
// panic; ComponentGlobalsOrRegister does both under the registry's lock,
// and the options then find it done. No cluster reads the entry: each
// server has a registry of its own.
func registerDefaultGlobals() {
	compatibility.DefaultComponentGlobalsRegistry.ComponentGlobalsOrRegister(basecompatibility.DefaultKubeComponent, compatibility.DefaultBuildEffectiveVersion(), utilfeature.DefaultMutableFeatureGate)
}
