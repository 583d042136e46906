package store

import "io"

// Options control Open.
type Options struct {
	ReadOnly bool
	// NoSandbox disables the sandbox-copy fallback for read-only opens of an uncleanly
	// shut down dir: Open then fails with ErrUncleanShutdown.
	NoSandbox bool
	// SandboxDir is where the sandbox copy goes; "" means os.TempDir().
	SandboxDir string
	// Logger receives progress lines (the sandbox copy); nil is silent.
	// Badger's own logging is always off.
	Logger io.Writer
	// Metadata and Ledgers pick other stores than the data dir's own Badger
	// databases (ParseMetadataURL, ParseLedgersURL); nil keeps the data dir's.
	Metadata, Ledgers *URL
	// Remote tunes the stores the URLs name.
	Remote RemoteOptions
	// FullVerify verifies every table instead of trusting the verification cache (store/badgerdir/verifycache.go); check sets it.
	FullVerify bool
	// Pulsar: the command reads the metadata as a Pulsar cluster's, so Open fails
	// with a *NoPulsarMetadataError when the metadata store's root holds none of
	// Pulsar's top-level nodes (CheckPulsarRoot): a forgotten or wrong chroot.
	Pulsar bool
}

// CacheDirEnv overrides where the caches of a session are kept (bookie indexes,
// the verification cache; default: os.UserCacheDir()/ledgermedic).
const CacheDirEnv = "LEDGERMEDIC_CACHE_DIR"
