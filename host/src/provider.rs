//! Provider forks driven by the host: the [`ForkProvider`] the host calls, ready-made
//! providers ([`TestProvider`], [`CommandProvider`]) and the driver
//! ([`Instance::run_fork`], [`Spool::run_fork`](crate::Spool::run_fork)).
//!
//! The core decides everything (idempotency, the barrier, the state machine); the driver
//! only takes the next step the operation's state calls for and hands the provider's
//! answer back. `dispatching` is durable before the provider is called, and the provider
//! is called at most once per operation: an answer that cannot be had is reported as
//! `unknown`, never retried.

use std::time::Duration;

use spool::ops;
use spool::provider_fork::{
    DispatchPayload, Disposition, ForkOperationView, ForkRequest, ForkStep,
};

use crate::client::Spool;
use crate::command;
use crate::error::Error;
use crate::runtime::Instance;

/// The agent's provider, asked to fork its own session.
///
/// `fork` is called once per operation, after `dispatching` was recorded; whatever it
/// returns is recorded as the operation's disposition. A provider that cannot tell
/// whether the fork happened (timeout, lost connection) answers
/// [`Disposition::Unknown`]: the operation is never retried automatically.
///
/// Any `FnMut(&DispatchPayload) -> Disposition` is a provider.
pub trait ForkProvider {
    /// Forks the provider session described by `payload` and says how it went.
    fn fork(&mut self, payload: &DispatchPayload) -> Disposition;
}

impl<F: FnMut(&DispatchPayload) -> Disposition> ForkProvider for F {
    fn fork(&mut self, payload: &DispatchPayload) -> Disposition {
        self(payload)
    }
}

/// A provider that always gives the same answer and remembers what it was sent: for
/// tests and demos.
///
/// ```
/// use spool_host::TestProvider;
///
/// let accept = TestProvider::accept();
/// let reject = TestProvider::reject("attachments are not supported", Some("attachment_unsupported"));
/// let lost = TestProvider::undeliverable("connection reset");
/// assert!(accept.dispatched().is_empty());
/// # let _ = (reject, lost);
/// ```
#[derive(Debug, Clone)]
pub struct TestProvider {
    answer: Disposition,
    dispatched: Vec<DispatchPayload>,
}

impl TestProvider {
    /// Accepts every fork (no provider session id, no provider state to bind).
    pub fn accept() -> Self {
        Self::answering(Disposition::Accepted {
            target_provider_session_id: None,
            bind_provider_state: false,
        })
    }

    /// Accepts every fork, giving the child `target_provider_session_id`.
    pub fn accept_as(target_provider_session_id: impl Into<String>) -> Self {
        Self::answering(Disposition::Accepted {
            target_provider_session_id: Some(target_provider_session_id.into()),
            bind_provider_state: false,
        })
    }

    /// Rejects every fork with `error` (and a reason code such as
    /// `attachment_unsupported`), both kept verbatim by the operation.
    pub fn reject(error: impl Into<String>, reason: Option<&str>) -> Self {
        Self::answering(Disposition::Rejected {
            error: error.into(),
            reason: reason.map(str::to_owned),
        })
    }

    /// Cannot tell whether the fork was delivered (`unknown`, with `error`).
    pub fn undeliverable(error: impl Into<String>) -> Self {
        Self::answering(Disposition::Unknown {
            error: error.into(),
        })
    }

    /// Always answers `answer`.
    pub fn answering(answer: Disposition) -> Self {
        TestProvider {
            answer,
            dispatched: Vec::new(),
        }
    }

    /// The payloads this provider was called with, oldest first.
    pub fn dispatched(&self) -> &[DispatchPayload] {
        &self.dispatched
    }
}

impl ForkProvider for TestProvider {
    fn fork(&mut self, payload: &DispatchPayload) -> Disposition {
        self.dispatched.push(payload.clone());
        self.answer.clone()
    }
}

/// A provider that is a shell command: `sh -c CMD` gets the dispatch payload as JSON on
/// stdin and must print a disposition as JSON on stdout and exit 0, e.g.
/// `{"disposition":"accepted","target_provider_session_id":"thread-2"}` or
/// `{"disposition":"rejected","error":"…","reason":"…"}`.
///
/// A command that cannot be started, exits non-zero, is killed, runs past the timeout
/// or prints anything else gives `unknown` (with what happened as its error): whether the
/// provider forked is then not known, and the operation is never retried.
#[derive(Debug, Clone)]
pub struct CommandProvider {
    command: String,
    timeout: Duration,
}

impl CommandProvider {
    /// The default time a command may take.
    pub const DEFAULT_TIMEOUT: Duration = command::DEFAULT_TIMEOUT;

    /// `sh -c command`, with [`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT).
    pub fn new(command: impl Into<String>) -> Self {
        CommandProvider {
            command: command.into(),
            timeout: command::DEFAULT_TIMEOUT,
        }
    }

    /// The same command with another timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn call(&self, payload: &DispatchPayload) -> Result<Disposition, String> {
        let cmd = &self.command;
        let input = serde_json::to_vec(payload)
            .map_err(|e| format!("cannot encode the dispatch payload: {e}"))?;
        let env = [(
            "SPOOL_FORK_OPERATION_ID",
            std::ffi::OsStr::new(&payload.operation_id),
        )];
        let text = command::run("provider", cmd, &env, input, self.timeout)?;
        serde_json::from_slice(&text).map_err(|e| {
            let shown = String::from_utf8_lossy(&text);
            let shown: String = shown.trim().chars().take(200).collect();
            format!("the provider command `{cmd}` printed no disposition JSON ({e}): {shown:?}")
        })
    }
}

impl ForkProvider for CommandProvider {
    fn fork(&mut self, payload: &DispatchPayload) -> Disposition {
        self.call(payload)
            .unwrap_or_else(|error| Disposition::Unknown { error })
    }
}

/// The fork drivers of a [`Spool`]: its clock and ids, its workspace.
impl Spool {
    /// Runs a whole provider fork operation with a fresh operation id, the clock read at
    /// each step: see [`Instance::run_fork`].
    ///
    /// ```
    /// use spool::provider_fork::{ForkRequest, ForkStatus};
    /// use spool::{AppendRequest, Role};
    /// use spool_host::{Spool, TestProvider};
    ///
    /// let mut spool = Spool::builder().open()?;
    /// spool.create_session("agent:main:src")?;
    /// spool.append_entry("agent:main:src", AppendRequest::new(Role::User, "hello"))?;
    /// let request = ForkRequest {
    ///     request_id: "request-1".into(),
    ///     target_key: "agent:main:child".into(),
    ///     target_session_id: "child-1".into(),
    ///     through_turn_id: None,
    ///     cwd: None,
    /// };
    /// let mut provider = TestProvider::accept_as("thread-child");
    /// let done = spool.run_fork("agent:main:src", request, &mut provider)?;
    /// assert_eq!(done.status, ForkStatus::Committed);
    /// assert_eq!(provider.dispatched().len(), 1);
    /// assert_eq!(spool.count_entries("agent:main:child")?, 1);
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn run_fork<P: ForkProvider + ?Sized>(
        &mut self,
        source_key: &str,
        request: ForkRequest,
        provider: &mut P,
    ) -> Result<ForkOperationView, Error> {
        let id = (self.ids)();
        let Spool {
            instance,
            workspace,
            clock,
            ..
        } = self;
        drive(
            instance,
            workspace,
            source_key,
            request,
            &id,
            provider,
            &mut || clock(),
        )
    }

    /// Continues the fork operation `operation_id` after a restart; see
    /// [`Instance::continue_fork`].
    pub fn continue_fork<P: ForkProvider + ?Sized>(
        &mut self,
        operation_id: &str,
        provider: &mut P,
    ) -> Result<ForkOperationView, Error> {
        let view = self.get_fork_operation(operation_id)?;
        let Spool {
            instance,
            workspace,
            clock,
            ..
        } = self;
        advance(instance, workspace, view, provider, &mut || clock())
    }
}

/// Drives one provider fork operation to where it can go now, with `now` read at each
/// step. See [`Instance::run_fork`].
pub(crate) fn drive<P: ForkProvider + ?Sized>(
    instance: &mut Instance,
    workspace: &str,
    source_key: &str,
    request: ForkRequest,
    operation_id: &str,
    provider: &mut P,
    now: &mut dyn FnMut() -> u64,
) -> Result<ForkOperationView, Error> {
    let fork = ops::Fork {
        source_key: source_key.to_owned(),
        request,
        operation_id: operation_id.to_owned(),
        now_ms: now(),
    };
    let view = instance.call(workspace, fork)?;
    advance(instance, workspace, view, provider, now)
}

/// Takes the steps the operation calls for ([`ForkOperationView::next_step`]): at
/// most one dispatch (the provider is called once) and one commit.
pub(crate) fn advance<P: ForkProvider + ?Sized>(
    instance: &mut Instance,
    workspace: &str,
    mut view: ForkOperationView,
    provider: &mut P,
    now: &mut dyn FnMut() -> u64,
) -> Result<ForkOperationView, Error> {
    let operation_id = view.operation.operation_id.clone();
    // Each step moves the state forward (prepared → recorded answer → committed).
    for _ in 0..2 {
        view = match view.next_step() {
            ForkStep::Dispatch => {
                let begin = ops::BeginForkDispatch {
                    operation_id: operation_id.clone(),
                    now_ms: now(),
                };
                let payload = instance.call(workspace, begin)?;
                let disposition = provider.fork(&payload);
                let record = ops::RecordForkDisposition {
                    operation_id: operation_id.clone(),
                    disposition,
                    now_ms: now(),
                };
                instance.call(workspace, record)?
            }
            ForkStep::Commit => {
                let commit = ops::CommitFork {
                    operation_id: operation_id.clone(),
                    now_ms: now(),
                };
                instance.call(workspace, commit)?
            }
            ForkStep::Done => break,
        };
    }
    Ok(view)
}

impl Instance {
    /// Runs a whole provider fork operation: [`fork`](spool::fork), then — when the
    /// operation is new (`prepared`) — [`begin_fork_dispatch`](spool::begin_fork_dispatch)
    /// (`dispatching` is durable before the provider is called), `provider` once,
    /// [`record_fork_disposition`](spool::record_fork_disposition) with its answer and,
    /// when it accepted, [`commit_fork`](spool::commit_fork). Returns the operation as it
    /// ends: `committed`, `failed` or `unknown`.
    ///
    /// The provider is called only for an operation this call prepared (`origin`
    /// `prepared`). The same request again returns the caller's operation (committed
    /// first if the provider had accepted it); another request's operation holding the
    /// fork point's barrier (`origin` `barrier_held`) is returned untouched.
    pub fn run_fork<P: ForkProvider + ?Sized>(
        &mut self,
        workspace: &str,
        source_key: &str,
        request: ForkRequest,
        operation_id: &str,
        provider: &mut P,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        drive(
            self,
            workspace,
            source_key,
            request,
            operation_id,
            provider,
            &mut || now_ms,
        )
    }

    /// Continues the operation `operation_id` after a restart
    /// ([`recover_fork_operations`](spool::recover_fork_operations)): a `prepared` one is
    /// dispatched to `provider` (once) and committed if accepted, a provider-accepted one
    /// is committed, any other is returned as it is.
    pub fn continue_fork<P: ForkProvider + ?Sized>(
        &mut self,
        workspace: &str,
        operation_id: &str,
        provider: &mut P,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        let get = ops::GetForkOperation {
            operation_id: operation_id.to_owned(),
        };
        let view = self.call(workspace, get)?;
        advance(self, workspace, view, provider, &mut || now_ms)
    }
}
