//! The component's generic entry point (`execute`: any `spool::Command` as JSON) and the
//! typed methods layered on it: branches and lineage, turns, provider fork operations
//! and their capability projection. These have no typed WIT function; each method here
//! serializes its [`Command`], runs it and decodes the core's own result type.

use serde::de::DeserializeOwned;
use serde_json::Value;
use spool::capabilities::{ForkProjection, ProbeAnswer, ProjectionMode};
use spool::fork_model::{
    DispatchPayload, Disposition, ForkOperationView, ForkRequest, Lineage as ForkLineage,
    ProviderBindingRequest, RecoveryReport,
};
use spool::turns::{CloseTurn, SessionTurns, StartTurn, Turn, TurnPage, TurnPageRequest};
use spool::{ArchivedReset, Branch, BranchRequest, Command, LineageView};

use crate::engine::Instance;
use crate::error::Error;

fn internal(message: String) -> Error {
    Error::Spool {
        code: "internal".to_owned(),
        message,
    }
}

/// The op name of a command (`"branch"`, …), for messages.
fn op_name(command: &Value) -> &str {
    command.get("op").and_then(Value::as_str).unwrap_or("?")
}

impl Instance {
    /// Runs `command` in `workspace` through the component's generic `execute` entry
    /// point and returns the operation's result as JSON (the core's result type,
    /// serialized). A refusal keeps the core's reason code (`not_found`, `conflict`, …)
    /// and message; a fork conflict's reason is in its message
    /// (`fork conflict (<reason>): …`).
    ///
    /// Every operation is reachable this way; the typed methods ([`branch`](Self::branch),
    /// [`fork`](Self::fork), …) are built on it.
    pub fn execute(&mut self, workspace: &str, command: &Command) -> Result<Value, Error> {
        self.run(workspace, command)
    }

    /// [`execute`](Self::execute), decoding the result as `T`.
    fn run<T: DeserializeOwned>(&mut self, workspace: &str, command: &Command) -> Result<T, Error> {
        let value = serde_json::to_value(command)
            .map_err(|e| internal(format!("cannot encode the command: {e}")))?;
        let op = op_name(&value).to_owned();
        let text = value.to_string();
        let result = self.call(|e, s| e.execute(s, workspace, &text))?;
        serde_json::from_str(&result).map_err(|e| {
            internal(format!(
                "the component returned a result of `{op}` that does not decode: {e}"
            ))
        })
    }

    /// The records of the archives the committed resets of `key` in `workspace` kept,
    /// oldest first ([`spool::list_reset_archives`]).
    pub fn list_reset_archives(
        &mut self,
        workspace: &str,
        key: &str,
    ) -> Result<Vec<ArchivedReset>, Error> {
        let key = key.to_owned();
        self.run(workspace, &Command::ListResetArchives { key })
    }

    /// Branches the session under `parent_key` into a new session under `child_key`
    /// (identity `request.child_session_id`): with `fork_transcript` it shares the
    /// parent's history (transcript, summaries, context states, canonical archive) at
    /// O(1) cost; with `fork_before_message_id` only the canonical prefix before that
    /// message (an unknown id is `not_found`, `Transcript message not found`, and no
    /// child is created); over `max_fork_tokens` the child starts empty.
    ///
    /// ```
    /// use spool::{AppendRequest, BranchRequest, NoArchive, Role};
    /// use spool_host::{Runtime, SqliteStorage};
    ///
    /// let mut spool = Runtime::shared()?.instantiate(SqliteStorage::open_in_memory()?, NoArchive)?;
    /// spool.create_session("default", "agent:main:main", "s1", 1_000)?;
    /// spool.append_entry("default", "agent:main:main", AppendRequest::new(Role::User, "hi"), 1_001)?;
    /// let child = spool.branch(
    ///     "default",
    ///     "agent:main:main",
    ///     "agent:main:alt",
    ///     BranchRequest::fork("s2"),
    ///     1_002,
    /// )?;
    /// assert_eq!(child.lineage.parent_session_key.as_deref(), Some("agent:main:main"));
    /// assert_eq!((child.lineage.spawn_depth, child.session.entry_count), (1, 1));
    /// let family = spool.lineage("default", "agent:main:main")?;
    /// assert_eq!(family.children[0].session.key, "agent:main:alt");
    /// # Ok::<(), spool_host::Error>(())
    /// ```
    pub fn branch(
        &mut self,
        workspace: &str,
        parent_key: &str,
        child_key: &str,
        request: BranchRequest,
        now_ms: u64,
    ) -> Result<Branch, Error> {
        let command = Command::Branch {
            parent_key: parent_key.to_owned(),
            child_key: child_key.to_owned(),
            request,
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// The session under `key` with its lineage, and its direct branches in key order.
    pub fn lineage(&mut self, workspace: &str, key: &str) -> Result<LineageView, Error> {
        let key = key.to_owned();
        self.run(workspace, &Command::Lineage { key })
    }

    /// The direct branches of the session under `key`, in key order.
    pub fn list_children(&mut self, workspace: &str, key: &str) -> Result<Vec<Branch>, Error> {
        let key = key.to_owned();
        self.run(workspace, &Command::ListChildren { key })
    }

    /// Starts a turn of the session under `key` (one runs at a time).
    pub fn start_turn(
        &mut self,
        workspace: &str,
        key: &str,
        request: StartTurn,
        now_ms: u64,
    ) -> Result<Turn, Error> {
        let key = key.to_owned();
        let command = Command::StartTurn {
            key,
            request,
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// Settles the running turn `turn_id`, recording its boundary and provider ids.
    pub fn settle_turn(
        &mut self,
        workspace: &str,
        key: &str,
        turn_id: &str,
        close: CloseTurn,
        now_ms: u64,
    ) -> Result<Turn, Error> {
        let command = Command::SettleTurn {
            key: key.to_owned(),
            turn_id: turn_id.to_owned(),
            close,
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// Interrupts the running turn `turn_id`, recording its boundary and provider ids.
    pub fn interrupt_turn(
        &mut self,
        workspace: &str,
        key: &str,
        turn_id: &str,
        close: CloseTurn,
        now_ms: u64,
    ) -> Result<Turn, Error> {
        let command = Command::InterruptTurn {
            key: key.to_owned(),
            turn_id: turn_id.to_owned(),
            close,
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// The turn `turn_id` of the session under `key`, or `None`.
    pub fn get_turn(
        &mut self,
        workspace: &str,
        key: &str,
        turn_id: &str,
    ) -> Result<Option<Turn>, Error> {
        let command = Command::GetTurn {
            key: key.to_owned(),
            turn_id: turn_id.to_owned(),
        };
        self.run(workspace, &command)
    }

    /// The latest and the active (running) turn of the session under `key`.
    pub fn session_turns(&mut self, workspace: &str, key: &str) -> Result<SessionTurns, Error> {
        let key = key.to_owned();
        self.run(workspace, &Command::SessionTurns { key })
    }

    /// A page of the turns of the session under `key`, in start order or its reverse
    /// (`request.cursor`: the previous page's `next_cursor`, read in the same order).
    pub fn list_turns(
        &mut self,
        workspace: &str,
        key: &str,
        request: TurnPageRequest,
    ) -> Result<TurnPage, Error> {
        let key = key.to_owned();
        self.run(workspace, &Command::ListTurns { key, request })
    }

    /// Prepares a provider fork of the session under `source_key` and returns the
    /// operation at once (`accepted`, phase `frozen`); `operation_id` is used only if the
    /// request is new (the same `request_id` and request return the existing operation).
    /// [`run_fork`](Self::run_fork) drives the whole operation.
    pub fn fork(
        &mut self,
        workspace: &str,
        source_key: &str,
        request: ForkRequest,
        operation_id: &str,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        let command = Command::Fork {
            source_key: source_key.to_owned(),
            request,
            operation_id: operation_id.to_owned(),
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// Records `dispatching` (durably, before the provider is called) and returns what to
    /// send to the provider. A second call is a fork conflict `stale_transition`.
    pub fn begin_fork_dispatch(
        &mut self,
        workspace: &str,
        operation_id: &str,
        now_ms: u64,
    ) -> Result<DispatchPayload, Error> {
        let command = Command::BeginForkDispatch {
            operation_id: operation_id.to_owned(),
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// Records the provider's answer to a dispatched fork (`accepted` → materializing,
    /// `rejected` → `failed`, `unknown` → `unknown`).
    pub fn record_fork_disposition(
        &mut self,
        workspace: &str,
        operation_id: &str,
        disposition: Disposition,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        let command = Command::RecordForkDisposition {
            operation_id: operation_id.to_owned(),
            disposition,
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// Materializes the child of a provider-accepted fork from its frozen snapshot, with
    /// its lineage, in one commit (→ `committed`).
    pub fn commit_fork(
        &mut self,
        workspace: &str,
        operation_id: &str,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        let command = Command::CommitFork {
            operation_id: operation_id.to_owned(),
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// The fork operation `operation_id` (unknown → `not_found`); never acknowledges.
    pub fn get_fork_operation(
        &mut self,
        workspace: &str,
        operation_id: &str,
    ) -> Result<ForkOperationView, Error> {
        let operation_id = operation_id.to_owned();
        self.run(workspace, &Command::GetForkOperation { operation_id })
    }

    /// Acknowledges a committed fork operation (once), releasing its turn barrier.
    pub fn acknowledge_fork_operation(
        &mut self,
        workspace: &str,
        operation_id: &str,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        let command = Command::AcknowledgeForkOperation {
            operation_id: operation_id.to_owned(),
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// Restart recovery: `dispatching` operations become `unknown`; `prepared` ones are
    /// listed for dispatch, `provider_accepted` ones for commit only.
    pub fn recover_fork_operations(
        &mut self,
        workspace: &str,
        now_ms: u64,
    ) -> Result<RecoveryReport, Error> {
        self.run(workspace, &Command::RecoverForkOperations { now_ms })
    }

    /// Before the child session under `key` first runs: claims its one-time provider
    /// state binding, if it has a pending one (`None` otherwise, and on every later call).
    pub fn claim_fork_provider_binding(
        &mut self,
        workspace: &str,
        key: &str,
        now_ms: u64,
    ) -> Result<Option<ProviderBindingRequest>, Error> {
        let key = key.to_owned();
        self.run(
            workspace,
            &Command::ClaimForkProviderBinding { key, now_ms },
        )
    }

    /// Records that the claimed provider state binding of `operation_id` is done.
    pub fn complete_fork_provider_binding(
        &mut self,
        workspace: &str,
        operation_id: &str,
        now_ms: u64,
    ) -> Result<ForkOperationView, Error> {
        let command = Command::CompleteForkProviderBinding {
            operation_id: operation_id.to_owned(),
            now_ms,
        };
        self.run(workspace, &command)
    }

    /// The provider fork lineage of the session under `key` (`None`: not the child of a
    /// provider fork).
    pub fn get_fork_lineage(
        &mut self,
        workspace: &str,
        key: &str,
    ) -> Result<Option<ForkLineage>, Error> {
        let key = key.to_owned();
        self.run(workspace, &Command::GetForkLineage { key })
    }

    /// The fork capability projection of the sessions under `keys`: call it without
    /// answers to get the provider probes it needs, then again with the provider's
    /// answers (anything but a positive answer projects `false`).
    pub fn fork_projection(
        &mut self,
        workspace: &str,
        keys: Vec<String>,
        mode: ProjectionMode,
        answers: Vec<ProbeAnswer>,
    ) -> Result<ForkProjection, Error> {
        let command = Command::ForkProjection {
            keys,
            mode,
            answers,
        };
        self.run(workspace, &command)
    }
}
