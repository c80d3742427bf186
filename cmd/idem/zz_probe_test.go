package main

import (
	"testing"
)

func TestProbeDamagedShow(t *testing.T) {
	p := populateKeystore(t)
	bad := p.succeeded[1]
	damageRecord(t, p.path, bad.Key)
	for _, a := range []string{bad.Key, bad.Name} {
		out, errOut, code := runCLI(t, "intents", "show", a, "--keystore", p.path)
		t.Logf("%s: code %d out %q err %q", a, code, out, errOut)
	}
	out, errOut, code := runCLI(t, "intents", "list", "--keystore", p.path)
	t.Logf("list: code %d out %q err %q", code, out, errOut)
	out, errOut, code = runCLI(t, "intents", "resume", "--keystore", p.path, "--no-progress", "--max-attempts", "1")
	t.Logf("resume: code %d out %q err %q", code, out, errOut)
}

func TestProbeDamagedOthers(t *testing.T) {
	p := populateKeystore(t)
	bad := p.pending[1]
	damageRecord(t, p.path, bad.Key)
	for _, a := range [][]string{
		{"resume", "--key", bad.Key},
		{"resume", "--key", bad.Name},
		{"settle", bad.Key, "--succeeded", "--note", "x", "--by", "me"},
		{"settle", bad.Name, "--succeeded", "--note", "x", "--by", "me"},
		{"show", bad.Name, "--json"},
		{"purge", "--older-than", "48h"},
		{"adopt", bad.Key},
	} {
		out, errOut, code := runCLI(t, append(append([]string{"intents"}, a...), "--keystore", p.path)...)
		t.Logf("%v: code %d out %q err %q", a, code, out, errOut)
	}
}
