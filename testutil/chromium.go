package testutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// chromiumNames are the binaries tried, Debian's first.
var chromiumNames = []string{"chromium", "chromium-browser"}

// ChromiumPath returns the headless browser's path, or "" when none is installed.
func ChromiumPath() string {
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// SkipWithoutChromium skips the test when Chromium is missing, except when
// CI=true: CI installs it (.ci/run), so there its absence is a failure.
func SkipWithoutChromium(t testing.TB) {
	t.Helper()
	if ChromiumPath() != "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Chromium is required in CI: apt-get install chromium")
	}
	t.Skip("chromium not installed (apt-get install chromium)")
}

// chromiumTimeout bounds one browser run: a cold start takes a few seconds.
const chromiumTimeout = 90 * time.Second

// runChromium runs headless Chromium on a local file with a fresh profile, no
// network but the file, and returns its stdout. The browser and its helper
// processes are one process group, killed by its id if the run overruns.
func runChromium(t testing.TB, file string, args ...string) []byte {
	return runChromiumAt(t, file, "", args...)
}

// runChromiumAt is runChromium on the file's address with a #fragment ("": none).
func runChromiumAt(t testing.TB, file, fragment string, args ...string) []byte {
	t.Helper()
	bin := ChromiumPath()
	if bin == "" {
		SkipWithoutChromium(t)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	profile := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + profile}
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	url := "file://" + abs
	if fragment != "" {
		url += "#" + fragment
	}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), url)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v on %s: %v\nstderr:\n%s", args, file, err, lastBytes(stderr.Bytes(), 4000))
	}
	return stdout.Bytes()
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// ChromiumDOM opens an HTML file in headless Chromium, lets its scripts run and
// returns the DOM it rendered, serialised.
func ChromiumDOM(t testing.TB, file string) string {
	t.Helper()
	return string(runChromium(t, file, "--dump-dom"))
}

// ChromiumDOMAt is ChromiumDOM of the file's address with a #fragment, which
// the page's scripts may read (the incident report's table filters).
func ChromiumDOMAt(t testing.TB, file, fragment string) string {
	t.Helper()
	return string(runChromiumAt(t, file, fragment, "--dump-dom"))
}

// ChromiumScreenshot renders an HTML file at width x height CSS pixels and
// writes a PNG of it to png.
func ChromiumScreenshot(t testing.TB, file, png string, width, height int) {
	t.Helper()
	abs, err := filepath.Abs(png)
	if err != nil {
		t.Fatal(err)
	}
	runChromium(t, file, "--screenshot="+abs, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
		t.Fatalf("chromium wrote no screenshot %s: %v", abs, err)
	}
}
