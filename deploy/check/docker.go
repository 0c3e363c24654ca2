package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
	"github.com/opencontainers/go-digest"
)

// copyContext copies src to dst leaving out what src/.dockerignore
// excludes, with the matcher `docker build` itself uses; it returns the
// copied paths.
func copyContext(src, dst string) ([]string, error) {
	var patterns []string
	if f, err := os.Open(filepath.Join(src, ".dockerignore")); err == nil {
		patterns, err = ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf(".dockerignore: %w", err)
		}
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fmt.Errorf(".dockerignore: %w", err)
	}
	var copied []string
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		skip, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return err
		}
		if skip {
			// A directory is walked anyway when an exception (!pattern)
			// may bring something in it back.
			if d.IsDir() && !pm.Exclusions() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		copied = append(copied, rel)
		return copyFile(path, target)
	})
	return copied, err
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// offlineImages answers BuildKit's base-image lookups without a registry
// (the default resolver would ask docker.io and gcr.io): every base image
// is taken as an empty linux/amd64 image, so checks that read a base
// image's own ENV (UndefinedVar) see none of it.
type offlineImages struct{}

func (offlineImages) ResolveImageConfig(_ context.Context, ref string, _ sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	return ref, "", []byte(`{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}}`), nil
}

// dockerfileReport is what the Dockerfile check prints.
type dockerfileReport struct {
	Stages []stageReport `json:"stages"`
}

type stageReport struct {
	Name     string   `json:"name"`
	Base     string   `json:"base"`
	Commands []string `json:"commands"` // each instruction as written, one line
}

// lintDockerfile parses file with BuildKit's parser, turns it into build
// instructions (which runs BuildKit's build checks, those of
// `docker build --check`) and fails on any parser or check warning.
func lintDockerfile(file string) (dockerfileReport, error) {
	var rep dockerfileReport
	f, err := os.Open(file)
	if err != nil {
		return rep, err
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", file, err)
	}
	var problems []string
	for _, w := range res.Warnings {
		problems = append(problems, fmt.Sprintf("%s: parser: %s", file, w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, description, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %s: %s (%s)", file, line, rule, msg, url))
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", file, err)
	}
	for _, s := range stages {
		sr := stageReport{Name: s.Name, Base: s.BaseName}
		for _, c := range s.Commands {
			if st, ok := c.(fmt.Stringer); ok {
				sr.Commands = append(sr.Commands, st.String())
			}
		}
		rep.Stages = append(rep.Stages, sr)
	}
	// The checks BuildKit runs while converting to a build graph (those of
	// `docker build --check`: JSONArgsRecommended, UndefinedVar,
	// ConsistentInstructionCasing, …), without resolving base images.
	raw, err := os.ReadFile(file)
	if err != nil {
		return rep, err
	}
	ctx := context.Background()
	sm := llb.NewSourceMap(nil, file, "Dockerfile", raw)
	if sm.Definition, err = llb.Scratch().Marshal(ctx); err != nil {
		return rep, err
	}
	res2, err := dockerfile2llb.DockerfileLint(ctx, raw, dockerfile2llb.ConvertOpt{SourceMap: sm, MetaResolver: offlineImages{}})
	if err != nil {
		return rep, fmt.Errorf("%s: %w", file, err)
	}
	for _, w := range res2.Warnings {
		line := 0
		if len(w.Location.Ranges) > 0 {
			line = int(w.Location.Ranges[0].Start.Line)
		}
		msg := fmt.Sprintf("%s:%d: %s: %s (%s)", file, line, w.RuleName, w.Detail, w.URL)
		if !slices.Contains(problems, msg) {
			problems = append(problems, msg)
		}
	}
	if res2.Error != nil {
		problems = append(problems, fmt.Sprintf("%s: %s", file, res2.Error.Message))
	}
	if len(problems) > 0 {
		return rep, errors.New(strings.Join(problems, "\n"))
	}
	return rep, nil
}
