//! The sans-IO operation machinery.
//!
//! An [`Operation`] is a state machine that asks for storage reads, receives their
//! results, emits at most one commit per attempt, and finishes with an outcome. It
//! never touches storage itself. A driver runs it:
//!
//! ```text
//! loop {
//!     match op.poll() {
//!         Step::Read(request) => op.handle_read(storage.read(request)),
//!         Step::Commit(batch) => op.handle_commit(storage.commit(batch)),
//!         Step::Done(outcome) => break outcome,
//!     }
//! }
//! ```
//!
//! **Drain rule: after every `handle_*` call, call [`Operation::poll`] again until it
//! returns [`Step::Done`]. Every `Read` and `Commit` step must be answered exactly once,
//! in order, before the next `poll`.**
//!
//! Operations are written as `async` bodies over an [`Io`] handle; the body's awaits are
//! the points where the operation yields a request. No executor, clock or thread is
//! involved: `poll` steps the body with a no-op waker. When a commit fails because a
//! precondition no longer holds (another writer got there first), the operation restarts
//! from its first read, up to [`MAX_ATTEMPTS`] times, so optimistic concurrency is the
//! core's business and not the hosts'.

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::engine::error::Error;
use crate::storage::{AsyncStorage, Batch, Kv, Progress, RangeQuery, Storage, StorageError};
use crate::types::ResetArchive;

/// How many times an operation is attempted when its commit keeps conflicting.
pub const MAX_ATTEMPTS: u32 = 16;

/// A read the operation needs answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadRequest {
    /// The value under one key.
    Get(Vec<u8>),
    /// An ordered range.
    Range(RangeQuery),
}

/// The answer to a [`ReadRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadResult {
    /// Answer to [`ReadRequest::Get`].
    Value(Option<Vec<u8>>),
    /// Answer to [`ReadRequest::Range`].
    Pairs(Vec<Kv>),
}

/// What the operation wants next.
#[derive(Debug)]
pub enum Step<T> {
    /// Perform this read in the operation's workspace and pass the result to
    /// [`Operation::handle_read`].
    Read(ReadRequest),
    /// Commit this batch atomically in the operation's workspace and pass the result to
    /// [`Operation::handle_commit`].
    Commit(Batch),
    /// Keep this part of the archive of a session generation that is about to be reset
    /// (a file, an archive store) and pass the outcome to [`Operation::handle_archive`]
    /// ([`ArchiveInProgress`] does both for an [`Archiver`]). A failure does not stop
    /// the reset; its result reports it. A kept archive counts only if the reset then
    /// commits: the commit records it ([`crate::list_reset_archives`]), and hosts list
    /// only recorded archives.
    Archive(ArchivePart),
    /// The operation finished.
    Done(Result<T, Error>),
}

/// Failure inside an operation body: a real error, or a lost optimistic race.
#[derive(Debug)]
pub(crate) enum Abort {
    /// Finish with this error.
    Fail(Error),
    /// A commit precondition failed: run the body again from the start.
    Retry,
}

impl From<Error> for Abort {
    fn from(error: Error) -> Self {
        Abort::Fail(error)
    }
}

pub(crate) type OpResult<T> = Result<T, Abort>;
/// An operation's outcome with its type erased: the machinery below is compiled once,
/// not once per result type (which cost about 50 KB of the component's code).
type Outcome = Box<dyn Any>;
type BoxBody = Pin<Box<dyn Future<Output = OpResult<Outcome>>>>;
type MakeBody = Box<dyn Fn(Io) -> BoxBody>;
/// What [`Operation::map`] does to the outcome once the body finishes.
type Finish = Box<dyn FnOnce(Outcome) -> Result<Outcome, Error>>;

/// Where the operation and its host stand in one storage exchange.
#[derive(Debug, Default)]
enum Exchange {
    #[default]
    Idle,
    Needs(Need),
    InFlight,
    Answered(Answer),
}

/// What the operation needs from its host next.
#[derive(Debug)]
enum Need {
    Read(ReadRequest),
    Commit(Batch),
    Archive(ArchivePart),
}

#[derive(Debug)]
enum Answer {
    Read(Result<ReadResult, StorageError>),
    Commit(Result<(), StorageError>),
    Archive(Result<(), String>),
}

#[derive(Debug, Default)]
struct Shared {
    exchange: Exchange,
    committed: bool,
    /// The progress reported since the driver last looked.
    progress: Option<Progress>,
}

/// The handle an operation body uses to ask for reads and its commit.
#[derive(Clone)]
pub(crate) struct Io {
    shared: Rc<RefCell<Shared>>,
}

struct Request {
    shared: Rc<RefCell<Shared>>,
    need: Option<Need>,
}

impl Future for Request {
    type Output = Result<Answer, Error>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let need = self.need.take();
        let mut shared = self.shared.borrow_mut();
        if let Some(need) = need {
            shared.exchange = Exchange::Needs(need);
            return Poll::Pending;
        }
        match std::mem::take(&mut shared.exchange) {
            Exchange::Answered(answer) => Poll::Ready(Ok(answer)),
            other => {
                shared.exchange = other;
                Poll::Ready(Err(Error::internal(
                    "operation resumed before its request was answered",
                )))
            }
        }
    }
}

impl Io {
    fn request(&self, need: Need) -> Request {
        Request {
            shared: self.shared.clone(),
            need: Some(need),
        }
    }

    async fn read(&self, request: ReadRequest) -> Result<ReadResult, Error> {
        if self.shared.borrow().committed {
            return Err(Error::internal("read after the operation's commit"));
        }
        match self.request(Need::Read(request)).await? {
            Answer::Read(result) => result.map_err(storage_error),
            _ => Err(Error::internal("a read was answered with something else")),
        }
    }

    /// Reports how far the operation has got: the driver hands it to the storage's
    /// [`Storage::progress`] before it answers the next request.
    pub(crate) fn progress(&self, phase: &str, done: u64, total: u64) {
        self.shared.borrow_mut().progress = Some(Progress {
            phase: phase.to_owned(),
            done,
            total,
        });
    }

    /// The value under `key`.
    pub(crate) async fn get(&self, key: Vec<u8>) -> Result<Option<Vec<u8>>, Error> {
        match self.read(ReadRequest::Get(key)).await? {
            ReadResult::Value(value) => Ok(value),
            ReadResult::Pairs(_) => Err(Error::internal("a range result answered a get")),
        }
    }

    /// The pairs of a range.
    pub(crate) async fn range(&self, query: RangeQuery) -> Result<Vec<Kv>, Error> {
        match self.read(ReadRequest::Range(query)).await? {
            ReadResult::Pairs(pairs) => Ok(pairs),
            ReadResult::Value(_) => Err(Error::internal("a get result answered a range")),
        }
    }

    /// Hands the host a part of a reset archive to keep; `Err` carries the host's reason.
    pub(crate) async fn archive(&self, archive: ArchivePart) -> Result<Result<(), String>, Error> {
        if self.shared.borrow().committed {
            return Err(Error::internal("archive after the operation's commit"));
        }
        match self.request(Need::Archive(archive)).await? {
            Answer::Archive(result) => Ok(result),
            _ => Err(Error::internal(
                "an archive was answered with something else",
            )),
        }
    }

    /// Commits `batch`: the operation's one write. A failed precondition restarts the
    /// operation ([`Abort::Retry`]).
    pub(crate) async fn commit(&self, batch: Batch) -> OpResult<()> {
        self.commit_or(batch, |_| None).await
    }

    /// Like [`Io::commit`], but a failed precondition for which `terminal` names an
    /// error ends the operation with it instead of restarting (e.g. a duplicate message
    /// id: re-reading would not make it unique).
    pub(crate) async fn commit_or(
        &self,
        batch: Batch,
        terminal: impl Fn(u32) -> Option<Error>,
    ) -> OpResult<()> {
        match self.try_commit(batch).await? {
            Ok(()) => Ok(()),
            Err(index) => Err(terminal(index).map_or(Abort::Retry, Abort::Fail)),
        }
    }

    /// Commits `batch`; a failed precondition is returned as `Err(index)` for the
    /// operation to decide (e.g. a compaction whose transcript changed under it reports
    /// `stale_preimage` rather than planning again).
    pub(crate) async fn try_commit(&self, batch: Batch) -> OpResult<Result<(), u32>> {
        {
            let mut shared = self.shared.borrow_mut();
            if shared.committed {
                return Err(Error::internal("second commit in one operation").into());
            }
            shared.committed = true;
        }
        match self.request(Need::Commit(batch)).await? {
            Answer::Commit(Ok(())) => Ok(Ok(())),
            Answer::Commit(Err(StorageError::Conflict(index))) => Ok(Err(index)),
            Answer::Commit(Err(error)) => Err(storage_error(error).into()),
            _ => Err(Error::internal("a commit was answered with something else").into()),
        }
    }
}

fn storage_error(error: StorageError) -> Error {
    match error {
        StorageError::Backend(cause) => Error::Storage { cause },
        StorageError::Unknown(cause) => Error::Unknown { cause },
        StorageError::Corrupt { key, detail } => Error::Corruption {
            key: crate::storage::keys::display(&key),
            detail,
        },
        StorageError::Conflict(index) => Error::Conflict {
            reason: format!("storage precondition {index} failed outside a commit"),
        },
    }
}

/// A running operation: poll it for [`Step`]s and answer them. See the module docs for
/// the drain rule.
pub struct Operation<T> {
    machine: Machine,
    output: PhantomData<fn() -> T>,
}

/// An [`Operation`] with its result type erased.
struct Machine {
    workspace: String,
    make: MakeBody,
    body: Option<BoxBody>,
    shared: Rc<RefCell<Shared>>,
    attempts: u32,
    finished: bool,
    /// Applied to the body's outcome when it finishes ([`Operation::map`]).
    finish: Option<Finish>,
}

impl<T> std::fmt::Debug for Operation<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("workspace", &self.machine.workspace)
            .field("attempts", &self.machine.attempts)
            .field("finished", &self.machine.finished)
            .finish_non_exhaustive()
    }
}

/// An operation body whose result is handed on boxed ([`Outcome`]): polled through, with
/// no state of its own (an `async` block around the body was a second state machine
/// per operation).
struct Erased<F>(Pin<Box<F>>);

impl<T: 'static, F: Future<Output = OpResult<T>>> Future for Erased<F> {
    type Output = OpResult<Outcome>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0
            .as_mut()
            .poll(cx)
            .map(|result| result.map(|value| Box::new(value) as Outcome))
    }
}

/// The outcome of type `T` in `outcome`; another type is an `internal` error.
fn downcast<T: 'static>(outcome: Outcome) -> Result<T, Error> {
    downcast_converting(outcome, std::convert::identity)
}

/// [`downcast`] with its error converted by `convert`.
fn downcast_converting<T: 'static, E>(outcome: Outcome, convert: fn(Error) -> E) -> Result<T, E> {
    match outcome.downcast::<T>() {
        Ok(value) => Ok(*value),
        Err(_) => Err(convert(wrong_type())),
    }
}

/// The error of [`downcast`], compiled once.
#[cold]
fn wrong_type() -> Error {
    Error::internal("an operation finished with a result of another type")
}

impl<T: 'static> Operation<T> {
    /// Wraps an operation body; `make` is called once per attempt.
    pub(crate) fn new<F, Fut>(workspace: &str, make: F) -> Self
    where
        F: Fn(Io) -> Fut + 'static,
        Fut: Future<Output = OpResult<T>> + 'static,
    {
        Self::of(Machine::new(
            workspace,
            Box::new(move |io| Box::pin(Erased(Box::pin(make(io))))),
        ))
    }

    /// An operation that fails at once (bad input found before any read).
    pub(crate) fn failed(workspace: &str, error: Error) -> Self {
        Self::of(Machine::failed(workspace, error))
    }

    fn of(machine: Machine) -> Self {
        Operation {
            machine,
            output: PhantomData,
        }
    }

    /// Advances the operation to its next request or its outcome.
    pub fn poll(&mut self) -> Step<T> {
        match self.machine.poll() {
            Step::Read(request) => Step::Read(request),
            Step::Commit(batch) => Step::Commit(batch),
            Step::Archive(part) => Step::Archive(part),
            Step::Done(outcome) => Step::Done(outcome.and_then(downcast)),
        }
    }

    /// Transforms the operation's outcome with `f` once it finishes. A plain function of
    /// the outcome, not a second body around the first: a future per result type was
    /// about 1 KB of the browser module each.
    pub fn map<U: 'static>(self, f: impl FnOnce(T) -> U + 'static) -> Operation<U> {
        let mut machine = self.machine;
        let before = machine.finish.take();
        machine.finish = Some(Box::new(move |outcome| {
            let outcome = match before {
                Some(before) => before(outcome)?,
                None => outcome,
            };
            Ok(Box::new(f(downcast::<T>(outcome)?)) as Outcome)
        }));
        Operation::of(machine)
    }
}

impl<T> Operation<T> {
    /// The workspace every read and commit of this operation belongs to.
    pub fn workspace(&self) -> &str {
        &self.machine.workspace
    }

    /// The progress the operation reported since this was last called (see
    /// [`Storage::progress`]); a driver of its own asks after each [`Operation::poll`].
    pub fn take_progress(&mut self) -> Option<Progress> {
        self.machine.take_progress()
    }

    /// Answers the last [`Step::Read`].
    pub fn handle_read(&mut self, result: Result<ReadResult, StorageError>) {
        self.machine.answer(Answer::Read(result));
    }

    /// Answers the last [`Step::Commit`].
    pub fn handle_commit(&mut self, result: Result<(), StorageError>) {
        self.machine.answer(Answer::Commit(result));
    }

    /// Answers the last [`Step::Archive`]: `Err` with the reason it could not be kept.
    pub fn handle_archive(&mut self, result: Result<(), String>) {
        self.machine.answer(Answer::Archive(result));
    }
}

impl Machine {
    fn take_progress(&mut self) -> Option<Progress> {
        self.shared.borrow_mut().progress.take()
    }

    fn new(workspace: &str, make: MakeBody) -> Self {
        Machine {
            workspace: workspace.to_owned(),
            make,
            body: None,
            shared: Rc::default(),
            attempts: 0,
            finished: false,
            finish: None,
        }
    }

    fn failed(workspace: &str, error: Error) -> Self {
        Self::new(
            workspace,
            Box::new(move |_io| {
                let error = error.clone();
                Box::pin(async move { Err(Abort::Fail(error)) })
            }),
        )
    }

    fn answer(&mut self, answer: Answer) {
        let mut shared = self.shared.borrow_mut();
        shared.exchange = match shared.exchange {
            Exchange::InFlight => Exchange::Answered(answer),
            // An answer nobody asked for: remember the misuse; `poll` reports it.
            _ => Exchange::Idle,
        };
    }

    fn poll(&mut self) -> Step<Outcome> {
        loop {
            if self.finished {
                return Step::Done(Err(Error::internal("operation polled after it finished")));
            }
            {
                let mut shared = self.shared.borrow_mut();
                match std::mem::take(&mut shared.exchange) {
                    Exchange::Needs(Need::Read(request)) => {
                        shared.exchange = Exchange::InFlight;
                        return Step::Read(request);
                    }
                    Exchange::Needs(Need::Commit(batch)) => {
                        shared.exchange = Exchange::InFlight;
                        return Step::Commit(batch);
                    }
                    Exchange::Needs(Need::Archive(archive)) => {
                        shared.exchange = Exchange::InFlight;
                        return Step::Archive(archive);
                    }
                    Exchange::InFlight => {
                        self.finished = true;
                        return Step::Done(Err(Error::internal(
                            "operation polled before its request was answered",
                        )));
                    }
                    other => shared.exchange = other,
                }
            }
            let body = match &mut self.body {
                Some(body) => body,
                None => {
                    self.attempts += 1;
                    *self.shared.borrow_mut() = Shared::default();
                    let io = Io {
                        shared: self.shared.clone(),
                    };
                    self.body.insert((self.make)(io))
                }
            };
            let mut cx = Context::from_waker(Waker::noop());
            match body.as_mut().poll(&mut cx) {
                Poll::Pending => {
                    if !matches!(self.shared.borrow().exchange, Exchange::Needs(_)) {
                        self.finished = true;
                        return Step::Done(Err(Error::internal(
                            "operation waited on something other than storage",
                        )));
                    }
                }
                Poll::Ready(Ok(value)) => {
                    self.finished = true;
                    return Step::Done(match self.finish.take() {
                        Some(finish) => finish(value),
                        None => Ok(value),
                    });
                }
                Poll::Ready(Err(Abort::Fail(error))) => {
                    self.finished = true;
                    return Step::Done(Err(error));
                }
                Poll::Ready(Err(Abort::Retry)) => {
                    self.body = None;
                    if self.attempts >= MAX_ATTEMPTS {
                        self.finished = true;
                        return Step::Done(Err(Error::Conflict {
                            reason: format!(
                                "gave up after {MAX_ATTEMPTS} attempts: other writers keep changing the same records"
                            ),
                        }));
                    }
                }
            }
        }
    }
}

/// Reads a request from a synchronous storage.
pub fn read_sync<S: Storage + ?Sized>(
    storage: &S,
    workspace: &str,
    request: &ReadRequest,
) -> Result<ReadResult, StorageError> {
    match request {
        ReadRequest::Get(key) => storage.get(workspace, key).map(ReadResult::Value),
        ReadRequest::Range(query) => storage.range(workspace, query).map(ReadResult::Pairs),
    }
}

/// One part of the archive a reset keeps, in this order: its head (a [`ResetArchive`]
/// without entries and summaries), its canonical transcript a page at a time (about a
/// megabyte each), then its summaries, which complete it. A reset of a session of any
/// size hands its archive over in bounded parts.
#[derive(Debug, Clone, PartialEq)]
pub enum ArchivePart {
    /// The archive starts: who and when, no entries and no summaries yet.
    Begin(ResetArchive),
    /// The next entries of its canonical transcript, in order.
    Entries(Vec<crate::types::Entry>),
    /// Its compaction summaries: the archive is complete, to be kept durably before
    /// the answer.
    Finish(Vec<serde_json::Value>),
}

/// Where a host keeps the archive of a session generation a reset replaces. Archives
/// are kept per workspace, and listed only when the reset's commit recorded them
/// ([`crate::list_reset_archives`]).
pub trait Archiver {
    /// Keeps `archive` of `workspace` (durably, before returning `Ok`; never where
    /// another workspace's archive could replace it); `Err` says why it could not.
    fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String>;

    /// A writer that keeps the archive whose head is `head` as its parts arrive (its
    /// memory bounded by a part), or `None` (the default) to be handed the whole
    /// archive by [`write_archive`](Self::write_archive) once it is complete.
    fn archive_writer(
        &self,
        _workspace: &str,
        _head: &ResetArchive,
    ) -> Option<Result<Box<dyn ArchiveWriter + Send>, String>> {
        None
    }
}

/// Keeps one archive part by part (see [`Archiver::archive_writer`]). Dropped before
/// [`finish`](Self::finish), it leaves no archive.
pub trait ArchiveWriter {
    /// Keeps the next entries.
    fn append(&mut self, entries: &[crate::types::Entry]) -> Result<(), String>;
    /// Keeps the summaries and makes the archive whole and durable.
    fn finish(self: Box<Self>, summaries: &[serde_json::Value]) -> Result<(), String>;
}

/// The archive an operation is handing over, part by part, to an [`Archiver`]: written
/// as the parts arrive by an archiver with a writer, gathered and handed over whole to
/// one without. Hosts answer each [`Step::Archive`] with [`handle`](Self::handle).
#[derive(Default)]
pub struct ArchiveInProgress(Option<Keeping>);

enum Keeping {
    Writing(Box<dyn ArchiveWriter + Send>),
    Gathering(ResetArchive),
}

impl std::fmt::Debug for ArchiveInProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match &self.0 {
            None => "ArchiveInProgress(none)",
            Some(Keeping::Writing(_)) => "ArchiveInProgress(writing)",
            Some(Keeping::Gathering(_)) => "ArchiveInProgress(gathering)",
        })
    }
}

impl ArchiveInProgress {
    /// Hands `part` to `archiver`; `Err` is its reason (the archive is then abandoned).
    pub fn handle(
        &mut self,
        archiver: &(impl Archiver + ?Sized),
        workspace: &str,
        part: ArchivePart,
    ) -> Result<(), String> {
        let not_begun = || "an archive part came before its head".to_owned();
        match part {
            ArchivePart::Begin(head) => {
                self.0 = None;
                self.0 = Some(match archiver.archive_writer(workspace, &head) {
                    Some(writer) => Keeping::Writing(writer?),
                    None => Keeping::Gathering(head),
                });
                Ok(())
            }
            ArchivePart::Entries(entries) => {
                let kept = match self.0.as_mut().ok_or_else(not_begun)? {
                    Keeping::Writing(writer) => writer.append(&entries),
                    Keeping::Gathering(archive) => {
                        archive.transcript_entries.extend(entries);
                        Ok(())
                    }
                };
                if kept.is_err() {
                    self.0 = None;
                }
                kept
            }
            ArchivePart::Finish(summaries) => match self.0.take().ok_or_else(not_begun)? {
                Keeping::Writing(writer) => writer.finish(&summaries),
                Keeping::Gathering(mut archive) => {
                    archive.summaries = summaries;
                    archiver.write_archive(workspace, &archive)
                }
            },
        }
    }
}

/// The archiver of a host that keeps no reset archives: every reset reports its
/// archive as not written.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoArchive;

impl Archiver for NoArchive {
    fn write_archive(&self, _workspace: &str, _archive: &ResetArchive) -> Result<(), String> {
        Err("this host keeps no reset archives".into())
    }
}

/// Runs an operation to completion against a synchronous storage, with no archive
/// store (see [`run_with`]).
pub fn run<T: 'static, S: Storage + ?Sized>(storage: &S, op: Operation<T>) -> Result<T, Error> {
    run_with(storage, &NoArchive, op)
}

/// Runs an operation to completion against a synchronous storage and archiver (the
/// driver used by the component and by native callers of the core).
pub fn run_with<T: 'static, S: Storage + ?Sized, A: Archiver + ?Sized>(
    storage: &S,
    archiver: &A,
    op: Operation<T>,
) -> Result<T, Error> {
    run_converting(storage, archiver, op, std::convert::identity)
}

/// [`run_with`] with its errors converted by `convert` (the component's into its WIT
/// error): before the result is unboxed, so that the part compiled per result type
/// builds its result once (converting after cost the guest about 19 KB).
pub(crate) fn run_converting<T: 'static, S: Storage + ?Sized, A: Archiver + ?Sized, E>(
    storage: &S,
    archiver: &A,
    op: Operation<T>,
    convert: fn(Error) -> E,
) -> Result<T, E> {
    let outcome = drive_with(storage, archiver, op.machine).map_err(convert)?;
    downcast_converting(outcome, convert)
}

/// [`run_with`] of an operation whatever its result type.
fn drive_with<S: Storage + ?Sized, A: Archiver + ?Sized>(
    storage: &S,
    archiver: &A,
    mut op: Machine,
) -> Result<Outcome, Error> {
    /// Ends the operation on the storage however the run ends.
    struct Scope<'a, S: Storage + ?Sized>(&'a S);
    impl<S: Storage + ?Sized> Drop for Scope<'_, S> {
        fn drop(&mut self) {
            self.0.end_operation();
        }
    }
    storage.begin_operation();
    let _scope = Scope(storage);
    let mut archive = ArchiveInProgress::default();
    loop {
        let step = op.poll();
        if let Some(progress) = op.take_progress() {
            storage.progress(&op.workspace, &progress);
        }
        match step {
            Step::Archive(part) => {
                let result = archive.handle(archiver, &op.workspace, part);
                op.answer(Answer::Archive(result));
            }
            Step::Read(request) => {
                let result = read_sync(storage, &op.workspace, &request);
                op.answer(Answer::Read(result));
            }
            Step::Commit(batch) => {
                let result = storage.commit(&op.workspace, batch);
                op.answer(Answer::Commit(result));
            }
            Step::Done(outcome) => return outcome,
        }
    }
}

/// Runs an operation to completion against an asynchronous storage (the browser driver).
/// The storage keeps reset archives too ([`AsyncStorage::write_archive`]).
pub async fn run_async<T: 'static, S: AsyncStorage + ?Sized>(
    storage: &S,
    op: Operation<T>,
) -> Result<T, Error> {
    drive_async(storage, op.machine).await.and_then(downcast)
}

/// [`run_async`] of an operation whatever its result type.
async fn drive_async<S: AsyncStorage + ?Sized>(
    storage: &S,
    mut op: Machine,
) -> Result<Outcome, Error> {
    // The browser's archive store takes an archive whole: it is gathered here.
    let mut gathered: Option<ResetArchive> = None;
    loop {
        let step = op.poll();
        if let Some(progress) = op.take_progress() {
            storage.progress(&op.workspace, &progress);
        }
        match step {
            Step::Archive(part) => {
                let not_begun = || "an archive part came before its head".to_owned();
                let result = match part {
                    ArchivePart::Begin(head) => {
                        gathered = Some(head);
                        Ok(())
                    }
                    ArchivePart::Entries(entries) => match gathered.as_mut() {
                        Some(archive) => {
                            archive.transcript_entries.extend(entries);
                            Ok(())
                        }
                        None => Err(not_begun()),
                    },
                    ArchivePart::Finish(summaries) => match gathered.take() {
                        Some(mut archive) => {
                            archive.summaries = summaries;
                            storage.write_archive(&op.workspace, &archive).await
                        }
                        None => Err(not_begun()),
                    },
                };
                op.answer(Answer::Archive(result));
            }
            Step::Read(ReadRequest::Get(key)) => {
                let result = storage.get(&op.workspace, &key).await;
                op.answer(Answer::Read(result.map(ReadResult::Value)));
            }
            Step::Read(ReadRequest::Range(query)) => {
                let result = storage.range(&op.workspace, &query).await;
                op.answer(Answer::Read(result.map(ReadResult::Pairs)));
            }
            Step::Commit(batch) => {
                let result = storage.commit(&op.workspace, batch).await;
                op.answer(Answer::Commit(result));
            }
            Step::Done(outcome) => return outcome,
        }
    }
}
