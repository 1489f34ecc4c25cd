//! The compiled-component cache: compiling the component with Cranelift takes seconds
//! (2.8–4 s on a 2-core machine, `cargo xtask bench startup`), loading a serialized
//! compilation a few milliseconds. The cache is an
//! optimisation only: any failure to read it recompiles, any failure to write it is
//! ignored.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::COMPONENT;

/// The wasmtime version the host is pinned to (`=48.0.8` in Cargo.toml); part of the
/// cache file name so an upgrade never even tries an old file.
const WASMTIME_VERSION: &str = "48.0.8";

/// How the compiled component was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheStatus {
    /// Loaded from the cache file.
    Hit,
    /// Compiled, and the cache file was written (it was missing or unusable).
    Stored,
    /// Compiled; no cache file was written, for the reason given.
    Uncached(String),
}

/// The cache directory: `SPOOL_CACHE_DIR`, else `$XDG_CACHE_HOME/spool`, else
/// `~/.cache/spool`; `None` when none of these is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("SPOOL_CACHE_DIR") {
        return Some(dir);
    }
    if let Some(xdg) = var("XDG_CACHE_HOME").filter(|p| p.is_absolute()) {
        return Some(xdg.join("spool"));
    }
    var("HOME").map(|home| home.join(".cache").join("spool"))
}

/// FNV-1a, 64 bits: a stable hash (std's `DefaultHasher` may change between releases).
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// The cache file name: a hash of the component bytes, the wasmtime version and the
/// engine's compilation settings.
pub(crate) fn file_name(engine: &Engine) -> String {
    let mut hasher = Fnv(0xcbf2_9ce4_8422_2325);
    COMPONENT.hash(&mut hasher);
    WASMTIME_VERSION.hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("spool-{}-{:016x}.cwasm", WASMTIME_VERSION, hasher.finish())
}

/// Loads the compiled component from `dir` or compiles it (and stores it in `dir`).
pub(crate) fn load(
    engine: &Engine,
    dir: Option<&Path>,
) -> wasmtime::Result<(Component, CacheStatus, Option<PathBuf>)> {
    let Some(dir) = dir else {
        let component = Component::from_binary(engine, COMPONENT)?;
        return Ok((
            component,
            CacheStatus::Uncached("no cache directory".into()),
            None,
        ));
    };
    let path = dir.join(file_name(engine));
    if path.is_file()
        && let Ok(component) = deserialize(engine, &path)
    {
        return Ok((component, CacheStatus::Hit, Some(path)));
    }
    let component = Component::from_binary(engine, COMPONENT)?;
    let status = match store(&component, dir, &path) {
        Ok(()) => CacheStatus::Stored,
        Err(reason) => CacheStatus::Uncached(reason),
    };
    Ok((component, status, Some(path)))
}

// SAFETY: `Component::deserialize_file` trusts the file to be a compilation produced by
// this wasmtime. The file sits in the user's own cache directory, is named after the
// exact component bytes, wasmtime version and engine settings, and is only ever written
// by `store` below, which writes a temporary file and renames it into place: a reader
// never sees a partly written file, and a file already mapped is never modified (a
// rewrite replaces the directory entry, not the mapped inode). Wasmtime itself checks
// the header, version and engine compatibility and reports a mismatch as an error,
// which makes us recompile.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: see the comment on this function.
    unsafe { Component::deserialize_file(engine, path) }
}

/// Writes the compilation to `path` atomically (temporary file, then rename).
fn store(component: &Component, dir: &Path, path: &Path) -> Result<(), String> {
    let bytes = component
        .serialize()
        .map_err(|e| format!("cannot serialize the component: {e:#}"))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the cache directory {}: {e}", dir.display()))?;
    let mut nonce = [0u8; 8];
    // A weak nonce is fine: it only keeps concurrent writers off each other's file.
    let _ = getrandom::fill(&mut nonce);
    let temp = dir.join(format!(
        ".{}.{}-{:016x}.tmp",
        file_name_of(path),
        std::process::id(),
        u64::from_le_bytes(nonce)
    ));
    let written = std::fs::write(&temp, &bytes).and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write the cache file {}: {e}", path.display())
    })
}

fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
