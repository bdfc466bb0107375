package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
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
			require.NoError(t, Run(Options{Binary: bin, Name: tt.flagName, Tag: "op:dev", Out: out}, &stdout))
			require.Contains(t, stdout.String(), "written to "+out)

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
	err := Run(Options{Binary: bin, Tag: "script", Out: out}, &stdout)
	require.ErrorContains(t, err, "binary: not an ELF executable")
	require.ErrorContains(t, err, `tag "script": names no tag`)
	require.NoFileExists(t, out)
	require.Empty(t, stdout.String())

	err = Run(Options{Binary: filepath.Join(dir, "missing"), Tag: "op:dev", Out: out}, &stdout)
	require.ErrorContains(t, err, "-binary: ")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoFileExists(t, out)
}

// TestCheck shows every required flag that is missing is named at once.
func TestCheck(t *testing.T) {
	err := Options{}.check()
	for _, want := range []string{"-binary: missing", "-tag: missing", "-out: missing"} {
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, Options{Binary: "b", Tag: "t:1", Out: "o"}.check())
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
