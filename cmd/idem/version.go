package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `idem version` reports, from the binary's build
// information.
type versionInfo struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// readVersion reads the module version (set by `go install ...@version`;
// "(devel)" in a build from a checkout) and the VCS revision Go stamps
// into binaries built from a repository.
func readVersion() versionInfo {
	v := versionInfo{Module: "github.com/idemkit/idem", Version: "(unknown)"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = info.GoVersion
	if info.Main.Path != "" {
		v.Module = info.Main.Path
	}
	if info.Main.Version != "" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the VCS revision this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeVersion(cmd.OutOrStdout(), readVersion(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as a JSON object")
	return cmd
}

func writeVersion(out io.Writer, v versionInfo, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	line := fmt.Sprintf("idem %s (%s)", v.Version, v.Go)
	if v.Revision != "" {
		line += " revision " + v.Revision
		if v.Modified {
			line += " (modified)"
		}
		if v.Time != "" {
			line += " " + v.Time
		}
	}
	_, err := fmt.Fprintln(out, line)
	return err
}
