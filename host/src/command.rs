//! Shell commands the host calls with a deadline: the provider of a provider fork
//! ([`CommandProvider`](crate::CommandProvider)) and the summarizer of a compaction
//! ([`CommandSummarizer`]). One runner serves both: `sh -c CMD` in its own process group,
//! the input on stdin, stdout collected, and the whole group killed when the deadline
//! passes.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use spool::compaction::Prepared;

/// The time a command may take unless told otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `sh -c cmd` with `env` added, `input` on stdin, and returns its stdout when it
/// exits 0 within `timeout`. `what` names the command in errors (`provider`, …).
pub(crate) fn run(
    what: &str,
    cmd: &str,
    env: &[(&str, &std::ffi::OsStr)],
    input: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // Its own process group, so that a timeout stops whatever it started too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run the {what} command `{cmd}`: {e}"))?;
    // Feed stdin and drain stdout on their own threads: a command that writes before
    // reading cannot deadlock, and one that leaves a process holding stdout open
    // cannot hold us past the timeout. A command that ignores its input closes the pipe
    // early; that is not an error.
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (sender, output) = mpsc::channel();
    if let Some(mut stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let read = stdout.read_to_end(&mut text).map(|_| text);
            let _ = sender.send(read);
        });
    }
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill_all(&mut child);
                return Err(format!(
                    "the {what} command `{cmd}` did not finish within {} ms and was killed",
                    timeout.as_millis()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => {
                kill_all(&mut child);
                return Err(format!(
                    "the {what} command `{cmd}` could not be waited for: {e}"
                ));
            }
        }
    };
    if !status.success() {
        return Err(match status.code() {
            Some(code) => format!("the {what} command `{cmd}` exited with status {code}"),
            None => format!("the {what} command `{cmd}` was killed by a signal"),
        });
    }
    let left = deadline.saturating_duration_since(Instant::now());
    match output.recv_timeout(left.max(Duration::from_millis(100))) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(format!(
            "cannot read the output of the {what} command `{cmd}`: {e}"
        )),
        Err(_) => Err(format!(
            "the {what} command `{cmd}` exited but its output did not end in time"
        )),
    }
}

/// Kills a timed-out command and everything in its process group.
fn kill_all(child: &mut Child) {
    #[cfg(unix)]
    {
        let group = format!("-{}", child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A summarizer that is a shell command, for [`Spool::compact_with`](crate::Spool::compact_with):
/// `sh -c CMD` gets the text to summarize ([`Prepared::input`]) on stdin, the path of a
/// private file holding the obligations as a JSON array in `$SPOOL_OBLIGATIONS_FILE`, and
/// the session key in `$SPOOL_SESSION_KEY`; what it prints on stdout is the summary.
///
/// A command that cannot be started, exits non-zero, is killed, runs past the timeout,
/// prints invalid UTF-8 or nothing is an error: the compaction writes nothing. The file
/// is removed when the command ends.
#[derive(Debug, Clone)]
pub struct CommandSummarizer {
    command: String,
    timeout: Duration,
}

impl CommandSummarizer {
    /// The default time a command may take (as for
    /// [`CommandProvider`](crate::CommandProvider)).
    pub const DEFAULT_TIMEOUT: Duration = DEFAULT_TIMEOUT;

    /// `sh -c command`, with [`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT).
    pub fn new(command: impl Into<String>) -> Self {
        CommandSummarizer {
            command: command.into(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same command with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Summarizes `prepared` (of the session `key`): the summary, or why there is none.
    pub fn summarize(&self, key: &str, prepared: &Prepared) -> Result<String, String> {
        let cmd = &self.command;
        let obligations = serde_json::to_vec(&prepared.obligations)
            .map_err(|e| format!("cannot encode the obligations: {e}"))?;
        let file = PrivateFile::create(&obligations)
            .map_err(|e| format!("cannot write the obligations for the summarizer: {e}"))?;
        let env = [
            ("SPOOL_OBLIGATIONS_FILE", file.path().as_os_str()),
            ("SPOOL_SESSION_KEY", std::ffi::OsStr::new(key)),
        ];
        let input = prepared.input.as_bytes().to_vec();
        let output = run("summarizer", cmd, &env, input, self.timeout)
            .map_err(|e| format!("{e}; nothing was written"))?;
        let summary = String::from_utf8(output).map_err(|_| {
            format!("the summarizer command `{cmd}` printed invalid UTF-8; nothing was written")
        })?;
        if summary.trim().is_empty() {
            return Err(format!(
                "the summarizer command `{cmd}` printed no summary; nothing was written"
            ));
        }
        Ok(summary.trim_end().to_owned())
    }
}

/// A file only this user can read, in the temporary directory, removed on drop.
struct PrivateFile(PathBuf);

impl PrivateFile {
    fn create(contents: &[u8]) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let path = std::env::temp_dir().join(format!(
            "spool-obligations-{}-{}.json",
            std::process::id(),
            crate::random_id()
        ));
        let mut file = options.open(&path)?;
        // From here the file exists: it is removed however the write ends.
        let created = PrivateFile(path);
        file.write_all(contents)?;
        Ok(created)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for PrivateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
