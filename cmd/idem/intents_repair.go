package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/keystore"
)

// repairFlags are the flags of `idem intents repair`.
type repairFlags struct {
	export string
	by     string
	yes    bool
}

func newIntentsRepairCommand(env *intentsEnv) *cobra.Command {
	var f repairFlags
	cmd := &cobra.Command{
		Use:   "repair KEY --export FILE --yes",
		Short: "Export a damaged record as stored, then replace it by an expired placeholder that keeps its key and name",
		Long: `Repair deals with a record that fails its checksum or does not decode, as
list, show and resume report it ("damaged record KEY (NAME): why"). KEY is
the key that line shows, or its key# reference.

Without --yes it prints what is left of the record and changes nothing
(exit status 1: the record is still damaged). With --yes it first writes
the record as stored, byte for byte, to the new file --export names (never
overwritten), and only then replaces the record by a placeholder: the same
key, bound to the same name, state expired, "may have executed", and an
"unknown" verdict in its audit trail naming --by and the export file.

Its outcome stays unknown, so nothing is lost and nothing is resent: a
re-run of the name finds the placeholder (never a new key that would pay
again), and a resume leaves it alone. Look the payment up at the provider,
then settle it: idem intents settle KEY --succeeded|--failed --note TEXT.
A sound record is refused: settle or purge it instead.`,
		Example: `  idem intents repair 7f482485-9a89-48f3-881f-fadffd423f32
  idem intents repair 7f482485-9a89-48f3-881f-fadffd423f32 --export payment-5.damaged.json --yes`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.by == "" {
				f.by = defaultSettler(env.getenv)
			}
			return runRepair(cmd.Context(), cmd.OutOrStdout(), env, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.export, "export", "", "new file the damaged record is written to, as stored, before it is replaced (required with --yes)")
	fl.StringVar(&f.by, "by", "", "who repairs (default $USER@hostname)")
	fl.BoolVar(&f.yes, "yes", false, "export and replace; without it nothing changes")
	return cmd
}

// damagedExport is the file repair writes before it replaces a record.
type damagedExport struct {
	Keystore string    `json:"keystore"`
	Key      string    `json:"key"`
	KeyRef   string    `json:"key_ref"`
	Name     string    `json:"name,omitempty"`
	Why      string    `json:"why"`
	By       string    `json:"by"`
	At       time.Time `json:"exported_at"`
	// Stored is the record as the keystore holds it: base64, and as text
	// when it reads as text (a Postgres row is JSON).
	StoredBase64 string `json:"stored_base64"`
	StoredText   string `json:"stored_text,omitempty"`
}

func runRepair(ctx context.Context, out io.Writer, env *intentsEnv, keyArg string, f repairFlags) (err error) {
	switch {
	case strings.TrimSpace(keyArg) == "":
		return errors.New("repair: empty key")
	case f.yes && f.export == "":
		return errors.New("--export FILE is required with --yes: the damaged record is written there before it is replaced")
	case strings.TrimSpace(f.by) == "":
		return errors.New("--by: empty; name who repairs (default $USER@hostname)")
	}
	if f.export != "" {
		if _, serr := os.Lstat(f.export); serr == nil {
			return fmt.Errorf("--export %s: the file exists; name a new one (an export is never overwritten)", f.export)
		}
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	defer env.ks.closeStore(st, &err)
	dr, ok := st.(keystore.DamageRepairer)
	if !ok {
		return fmt.Errorf("keystore %s cannot repair records (%T)", env.ks.display(), st)
	}
	key, err := resolveDamagedKey(ctx, st, keyArg)
	if err != nil {
		return env.repairLookupError(keyArg, err)
	}
	d, err := dr.Damaged(ctx, key)
	if err != nil {
		return env.repairLookupError(keyArg, err)
	}
	label := shownKey(d.Key)
	if name := d.BusinessName(); name != "" {
		label += " (" + oneLineOf(name, 80) + ")"
	}
	fmt.Fprintf(out, "damaged record %s: %s; %d bytes stored\n", label, damagedWhy(d.Key, d.Why), len(d.Raw))
	if !f.yes {
		return failedf("record %s left as it is (damaged): give --export FILE --yes to export it and replace it by a placeholder", shownKey(d.Key))
	}
	now := env.now().UTC()
	if err := writeExport(f.export, damagedExport{
		Keystore: env.ks.display(), Key: d.Key, KeyRef: keystore.KeyRef(d.Key), Name: d.BusinessName(),
		Why: damagedWhy(d.Key, d.Why), By: f.by, At: now,
		StoredBase64: base64.StdEncoding.EncodeToString(d.Raw), StoredText: textOf(d.Raw),
	}); err != nil {
		return err
	}
	note := fmt.Sprintf("damaged record (%s) replaced by a placeholder; as stored it was exported to %s (%d bytes)",
		damagedWhy(d.Key, d.Why), f.export, len(d.Raw))
	if err := dr.ReplaceDamaged(ctx, d, keystore.Placeholder(d, f.by, note, now)); err != nil {
		if errors.Is(err, keystore.ErrDamageChanged) || errors.Is(err, keystore.ErrNotDamaged) {
			return failedf("record %s not replaced (%v); the export in %s is of what was read: look again with list", shownKey(d.Key), err, f.export)
		}
		return fmt.Errorf("replacing record %s in %s (the export in %s stays): %w", shownKey(d.Key), env.ks.display(), f.export, err)
	}
	_, err = fmt.Fprintf(out, "exported to %s; replaced by an expired placeholder that keeps its key and name. Its outcome is unknown: "+
		"look it up at the provider, then idem intents settle %s --succeeded|--failed --note TEXT\n", f.export, shownKey(d.Key))
	return err
}

// resolveDamagedKey is the stored key arg names: arg itself, or, for a
// key# reference, the damaged record's key it refers to.
func resolveDamagedKey(ctx context.Context, st keystore.Store, arg string) (string, error) {
	if !strings.HasPrefix(arg, "key#") {
		return arg, nil
	}
	_, err := st.List(ctx, keystore.Filter{})
	var damaged *keystore.CorruptRecordsError
	if !errors.As(err, &damaged) {
		if err != nil {
			return "", err
		}
		return "", fmt.Errorf("%w: no damaged record is %s", keystore.ErrNotFound, arg)
	}
	for _, k := range damaged.Keys {
		if keystore.KeyRef(k) == arg {
			return k, nil
		}
	}
	return "", fmt.Errorf("%w: no damaged record is %s", keystore.ErrNotFound, arg)
}

// repairLookupError words what repair met looking keyArg up.
func (env *intentsEnv) repairLookupError(keyArg string, err error) error {
	switch {
	case errors.Is(err, keystore.ErrNotFound):
		return failedf("no record with key %q in %s (repair takes the key a damaged line shows, or its key# reference)", keyArg, env.ks.display())
	case errors.Is(err, keystore.ErrNotDamaged):
		return failedf("intent %s in %s is not damaged: repair is for damaged records; show, settle or purge it", keyArg, env.ks.display())
	}
	return fmt.Errorf("reading %s: %w", env.ks.display(), err)
}

// writeExport writes e to the new file path, synced before it returns, so
// the record is on disk before the keystore changes.
func writeExport(path string, e damagedExport) (err error) {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	defer func() {
		if cerr := file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("--export: %w", cerr)
		}
	}()
	if _, err := file.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("--export: %w", err)
	}
	return nil
}

// textOf is b as text when it reads as text, else "".
func textOf(b []byte) string {
	if printable(b) {
		return string(b)
	}
	return ""
}
