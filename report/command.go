package report

import "strings"

// CommandLine is the command line a journal run recorded, said once: its Args
// start with the command path itself when they are recorded ("index backfill
// --apply" for command "index backfill"), and are only the arguments otherwise
// (an undo records its run id). journal show, journal undo and the report all
// print it with this.
func CommandLine(command string, args []string) string {
	if len(args) == 0 {
		return command
	}
	line := strings.Join(args, " ")
	if line == command || strings.HasPrefix(line, command+" ") {
		return line
	}
	return command + " " + line
}
