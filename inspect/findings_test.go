package inspect

import (
	"testing"
)

// Every kind has exactly one fixed severity, and Kinds lists exactly the kinds
// that have one: a new finding kind cannot be half-registered.
func TestEveryKindHasOneSeverity(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range Kinds() {
		if listed[k] {
			t.Errorf("%s listed twice", k)
		}
		listed[k] = true
		if _, ok := kindSeverity[k]; !ok {
			t.Errorf("%s has no severity", k)
		}
	}
	for k := range kindSeverity {
		if !listed[k] {
			t.Errorf("%s has a severity but Kinds() does not list it", k)
		}
	}
}
