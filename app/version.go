package app

import (
	"runtime/debug"
)

// version is set at build time: go build -ldflags "-X github.com/ledgermedic/ledgermedic/app.version=v1.2.3".
var version string

// Version is the version --version prints and every journal run records: the
// -ldflags value, else the module version and VCS revision Go stamped into the binary.
func Version() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				v += "+dirty"
			}
		}
	}
	return v
}
