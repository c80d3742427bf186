package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeRunsIntro is the line before the `idem runs` session of docs/CLI.md.
const readmeRunsIntro = "answer was lost, then a refund the provider refused:\n\n```\n"

// The `idem runs` session of docs/CLI.md is what the commands print for the
// runs sagaRuns writes: each command is run, and its output compared
// line by line ("..." skips lines; times and ages may differ).
func TestRunsReadmeSessionIsTrue(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/CLI.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), readmeRunsIntro)
	require.True(t, ok, "docs/CLI.md has the idem runs session")
	block, _, ok := strings.Cut(after, "\n```")
	require.True(t, ok)
	path, _ := sagaKeystore(t)

	var cmds [][]string // each: the command line, then what it prints
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "idem runs ") {
			cmds = append(cmds, []string{line})
			continue
		}
		require.NotEmpty(t, cmds, "the session starts with a command: %q", line)
		cmds[len(cmds)-1] = append(cmds[len(cmds)-1], line)
	}
	require.Len(t, cmds, 4)
	for _, c := range cmds {
		args := shellWords(t, strings.TrimPrefix(c[0], "idem runs "))
		for i, a := range args {
			switch a {
			case "keys.db":
				args[i] = path
			case "$API_TOKEN":
				args[i] = testToken
			}
		}
		stdout, stderr, code := runRunsCLI(t, nil, args...)
		require.Equal(t, exitOK, code, "%s: %s", c[0], stderr)
		assertSameLines(t, c[0], strings.TrimRight(strings.Join(c[1:], "\n"), "\n"), strings.TrimRight(stdout, "\n"))
	}
}

// timesAndAges are the parts of a line that differ from run to run.
var timesAndAges = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\(\d+[smhd]\d*[smh]? ago\)|  \d+[smhd]$`)

// assertSameLines compares want (where a line "..." skips any lines) with
// got, times and ages aside.
func assertSameLines(t *testing.T, cmd, want, got string) {
	t.Helper()
	norm := func(s string) string { return timesAndAges.ReplaceAllString(s, "T") }
	gotLines := strings.Split(got, "\n")
	i := 0
	skipping := false
	for _, w := range strings.Split(want, "\n") {
		if w == "..." {
			skipping = true
			continue
		}
		for skipping && i < len(gotLines) && norm(gotLines[i]) != norm(w) {
			i++
		}
		skipping = false
		if !assert.Less(t, i, len(gotLines), "%s: the output ends before %q:\n%s", cmd, w, got) {
			return
		}
		assert.Equal(t, norm(w), norm(gotLines[i]), "%s:\n%s", cmd, got)
		i++
	}
	assert.Equal(t, len(gotLines), i, "%s prints more than docs/CLI.md shows:\n%s", cmd, got)
}

// shellWords splits a command line the way a shell does for the
// page's commands: words, and double-quoted strings.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var out []string
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		if rest, ok := strings.CutPrefix(line, `"`); ok {
			word, tail, ok := strings.Cut(rest, `"`)
			require.True(t, ok, "unclosed quote in %q", line)
			out = append(out, word)
			line = tail
			continue
		}
		word, tail, _ := strings.Cut(line, " ")
		out = append(out, word)
		line = tail
	}
	return out
}
