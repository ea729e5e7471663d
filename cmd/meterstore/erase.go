package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newErase() *cobra.Command {
	var (
		d                          deployment
		subject, legalBasis, actor string
		lift                       bool
	)
	cmd := &cobra.Command{
		Use:   "erase",
		Short: "Carry out an erasure request: unlink a subject from its readings, audited, and refuse to link it again",
		Long: `Deletes every mapping of the subject's natural id (--subject) to the
pseudonymous references its readings carry, so that the readings are
anonymous in both tiers from the commit on; no reading is rewritten. The
erasure is recorded in erasure_log with the legal basis and the actor, the
subject only as a keyed hash (retention.subject_key, which must be set), and
the hash joins the suppression list, so that a later delivery cannot link the
subject again. --lift removes a subject from the suppression list, audited
the same way.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if lift {
				lifted, err := s.UnsuppressSubject(cmd.Context(), subject, legalBasis, actor)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "suppression lifted: %v\n", lifted)
				return nil
			}
			n, err := s.EraseSubject(cmd.Context(), subject, legalBasis, actor)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "erased: %d references unlinked; the subject is suppressed\n", n)
			return nil
		},
	}
	d.flags(cmd, false)
	f := cmd.Flags()
	f.StringVar(&subject, "subject", "", "the subject's natural id (required)")
	f.StringVar(&legalBasis, "legal-basis", "Art. 17 DSGVO", "the legal basis recorded, and the request's reference")
	f.StringVar(&actor, "actor", "operator", "who carries out the request, as recorded")
	f.BoolVar(&lift, "lift", false, "lift the subject's suppression instead")
	cmd.MarkFlagRequired("subject")
	return cmd
}
