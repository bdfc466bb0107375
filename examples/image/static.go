package image

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Static checks that binary is an executable a scratch image can run: a
// Linux ELF file with no program interpreter (no dynamic loader to load
// it) and no shared library it needs. It returns the binary's
// architecture as GOARCH names it, and an error naming what the binary
// needs otherwise, or that it is no ELF file at all.
func Static(binary []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	var errs []error
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		errs = append(errs, fmt.Errorf("an ELF file of type %s, not an executable", f.Type))
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		errs = append(errs, fmt.Errorf("built for %s, not Linux", f.OSABI))
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(p.Open(), 256))
			errs = append(errs, fmt.Errorf("dynamically linked: it needs the loader %s, which an empty image lacks (build it with CGO_ENABLED=0)", strings.TrimRight(string(interp), "\x00")))
		}
	}
	// A binary without a dynamic section has no DT_NEEDED; any other
	// error is the file's.
	if libs, err := f.ImportedLibraries(); err != nil {
		errs = append(errs, fmt.Errorf("its dynamic section: %w", err))
	} else if len(libs) > 0 {
		errs = append(errs, fmt.Errorf("dynamically linked: it needs %s (build it with CGO_ENABLED=0)", strings.Join(libs, ", ")))
	}
	arch, ok := goarch(f)
	if !ok {
		errs = append(errs, fmt.Errorf("built for the machine %s, which no GOARCH names", f.Machine))
	}
	return arch, errors.Join(errs...)
}

// goarch returns the GOARCH of f's machine, and false for one Go doesn't
// build Linux binaries for.
func goarch(f *elf.File) (string, bool) {
	little := f.Data == elf.ELFDATA2LSB
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", true
	case elf.EM_AARCH64:
		return "arm64", true
	case elf.EM_386:
		return "386", true
	case elf.EM_ARM:
		return "arm", true
	case elf.EM_PPC64:
		if little {
			return "ppc64le", true
		}
		return "ppc64", true
	case elf.EM_S390:
		return "s390x", true
	case elf.EM_RISCV:
		return "riscv64", true
	case elf.EM_LOONGARCH:
		return "loong64", true
	case elf.EM_MIPS:
		switch {
		case f.Class == elf.ELFCLASS64 && little:
			return "mips64le", true
		case f.Class == elf.ELFCLASS64:
			return "mips64", true
		case little:
			return "mipsle", true
		default:
			return "mips", true
		}
	}
	return "", false
}
