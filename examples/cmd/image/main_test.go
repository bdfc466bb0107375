package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/image"
)

// TestRun shows the command writes the image of the binary it is given to
// the tarball it is told, named by the binary's file name unless -name
// says otherwise, and says so.
func TestRun(t *testing.T) {
	tests := []struct {
		name, flagName, wantEntrypoint string
	}{
		{"the binary's file name", "", "/op"},
		{"-name", "operator", "/operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "op")
			require.NoError(t, os.WriteFile(bin, staticELF(), 0o600))
			out := filepath.Join(dir, "op.tar")
			var stdout bytes.Buffer
			require.NoError(t, Run(Options{Binaries: []string{bin}, Name: tt.flagName, Tag: "op:dev", Out: out}, &stdout))
			require.Contains(t, stdout.String(), "written to "+out+" (linux/amd64) and "+filepath.Join(dir, "op.oci"))
			require.FileExists(t, filepath.Join(dir, "op.oci", "index.json"), "the layout beside the tarball")

			img, err := tarball.ImageFromPath(out, nil)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			require.Equal(t, []string{tt.wantEntrypoint}, cfg.Config.Entrypoint)
			require.Equal(t, "65532:65532", cfg.Config.User)
		})
	}
}

// TestRunMistakes shows a binary that can't be an image is reported, with
// every mistake at once, and leaves no tarball behind to load.
func TestRunMistakes(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "script")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o600))
	out := filepath.Join(dir, "script.tar")
	var stdout bytes.Buffer
	err := Run(Options{Binaries: []string{bin}, Tag: "script", Out: out}, &stdout)
	require.ErrorContains(t, err, "binary 0: not an ELF executable")
	require.ErrorContains(t, err, `tag "script": names no tag`)
	require.NoFileExists(t, out)
	require.Empty(t, stdout.String())

	err = Run(Options{Binaries: []string{filepath.Join(dir, "missing")}, Tag: "op:dev", Out: out}, &stdout)
	require.ErrorContains(t, err, "-binary: ")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoFileExists(t, out)

	op := filepath.Join(dir, "op")
	require.NoError(t, os.WriteFile(op, staticELF(), 0o600))
	err = Run(Options{Binaries: []string{op}, Tag: "op:dev", Out: out, Arch: "arm64"}, &stdout)
	require.ErrorContains(t, err, "-arch arm64: no binary of it, only amd64")
	require.NoFileExists(t, out)
	require.NoDirExists(t, filepath.Join(dir, "op.oci"))
}

// TestRunLabels shows -source, -revision and -version become the image's
// OCI labels, and -oci names the layout's directory.
func TestRunLabels(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "op")
	require.NoError(t, os.WriteFile(bin, staticELF(), 0o600))
	out, oci := filepath.Join(dir, "op.tar"), filepath.Join(dir, "layout")
	labels := image.Labels{Source: "https://github.com/loam-dev/loam", Revision: "0f10bd1", Version: "v1.2.3"}
	require.NoError(t, Run(Options{Binaries: []string{bin}, Tag: "op:dev", Out: out, OCI: oci, Labels: labels}, io.Discard))
	img, err := tarball.ImageFromPath(out, nil)
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"org.opencontainers.image.source":   labels.Source,
		"org.opencontainers.image.revision": labels.Revision,
		"org.opencontainers.image.version":  labels.Version,
	}, cfg.Config.Labels)
	require.FileExists(t, filepath.Join(oci, "oci-layout"))
}

// TestCheck shows every required flag that is missing is named at once.
func TestCheck(t *testing.T) {
	err := Options{}.check()
	for _, want := range []string{"-binary: missing", "-tag: missing", "-out: missing"} {
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, Options{Binaries: []string{"b"}, Tag: "t:1", Out: "o"}.check())
}

// staticELF returns the ELF header of a static amd64 Linux executable: what
// debug/elf reads, and runs nowhere.
func staticELF() []byte {
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(elf.EM_X86_64),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     64,
		Ehsize:    64,
		Phentsize: 56,
		Shentsize: 64,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, hdr)
	return b.Bytes()
}
