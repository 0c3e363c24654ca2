package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
)

type composeService struct {
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	Environment map[string]string `json:"environment"`
	DependsOn   map[string]string `json:"depends_on"` // service → condition
	Healthcheck []string          `json:"healthcheck"`
	Volumes     []string          `json:"volumes"`
}

// checkCompose loads file as `docker compose config` does (interpolation
// with envFile, the Compose specification's JSON schema, then the model's
// own consistency checks) and returns each service's resolved settings.
func checkCompose(file, envFile string) ([]composeService, error) {
	opts, err := cli.NewProjectOptions([]string{file}, cli.WithEnvFiles(envFile), cli.WithDotEnv, cli.WithName("threadengine"))
	if err != nil {
		return nil, err
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []composeService
	for name, s := range p.Services {
		cs := composeService{Name: name, Image: s.Image, Environment: map[string]string{}, DependsOn: map[string]string{}}
		for k, v := range s.Environment {
			if v != nil {
				cs.Environment[k] = *v
			}
		}
		for dep, d := range s.DependsOn {
			cs.DependsOn[dep] = d.Condition
		}
		if s.HealthCheck != nil {
			cs.Healthcheck = s.HealthCheck.Test
		}
		for _, v := range s.Volumes {
			cs.Volumes = append(cs.Volumes, v.Source+":"+v.Target)
		}
		out = append(out, cs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
