//! Several tabs on one database: each operation runs under an exclusive Web Lock per
//! database and workspace, and every operation that wrote tells the other tabs through a
//! `BroadcastChannel`.
//!
//! The lock is not what keeps data safe — the core's compare-and-set commits already make
//! concurrent writers from any number of tabs lose nothing — it keeps tabs from racing
//! each other into retries, and while a tab holds it, no other tab writes the workspace,
//! so the tab's operations answer reads of what earlier ones read or committed from
//! memory ([`Known`], forgotten whenever the lock is let go or taken anew). Where the
//! browser has no Web Locks (`navigator.locks` missing) operations simply run unlocked
//! and read afresh.
//!
//! Taking a Web Lock is a round trip to the browser, as costly as an IndexedDB request,
//! so a tab keeps the lock across back-to-back operations ([`Workspace::enter`]): within
//! the tab, operations on one workspace queue up locally, and the Web Lock is let go
//! once the tab has had nothing to run for a whole task (a `setTimeout(0)`), which is
//! when other tabs get their turn. Change notices wait for the same moment, so a burst
//! of writes is one notice.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::idb::Known;

/// The Web Lock name of a workspace of a database.
pub(crate) fn lock_name(db: &str, workspace: &str) -> String {
    format!("spool:{db}:{workspace}")
}

/// The channel name of a database.
pub(crate) fn channel_name(db: &str) -> String {
    format!("spool:{db}")
}

/// A held Web Lock: dropping it lets the lock go.
pub(crate) struct Held {
    release: Option<Function>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.call0(&JsValue::UNDEFINED);
        }
    }
}

/// `navigator.locks`, if this browser has it.
fn lock_manager() -> Option<JsValue> {
    let navigator = Reflect::get(&js_sys::global(), &"navigator".into()).ok()?;
    let locks = Reflect::get(&navigator, &"locks".into()).ok()?;
    (!locks.is_undefined() && !locks.is_null()).then_some(locks)
}

/// Waits for the exclusive lock `name`; `None` when the browser has no Web Locks.
pub(crate) async fn acquire(name: &str) -> Result<Option<Held>, JsValue> {
    let Some(locks) = lock_manager() else {
        return Ok(None);
    };
    let request: Function = Reflect::get(&locks, &"request".into())?.dyn_into()?;
    // `release` settles the promise the lock callback returns; `acquired` settles when
    // the callback runs, i.e. when the lock is ours.
    let mut release = None;
    let held = Promise::new(&mut |resolve, _| release = Some(resolve));
    let mut acquired = None;
    let granted = Promise::new(&mut |resolve, _| acquired = Some(resolve));
    let on_grant = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        if let Some(acquired) = &acquired {
            let _ = acquired.call0(&JsValue::UNDEFINED);
        }
        held.into()
    });
    // The request's own promise settles after the release; nothing waits for it.
    request.call2(&locks, &name.into(), &on_grant)?;
    JsFuture::from(granted).await?;
    Ok(Some(Held { release }))
}

/// One workspace lock as this tab sees it.
#[derive(Default)]
struct Local {
    /// The Web Lock, while this tab holds it.
    held: Option<Held>,
    /// An operation of this tab runs under it.
    busy: bool,
    /// Operations of this tab waiting for it: each resolves its promise to go.
    waiting: VecDeque<Function>,
    /// Bumped on every entry: a scheduled release only applies if nothing came since.
    generation: u64,
    /// A change notice to post once the tab is idle: a burst of writes sends one.
    notice: Option<(Rc<web_sys::BroadcastChannel>, String)>,
    /// What this tab's operations read and wrote while it has held the Web Lock: current
    /// for as long as it keeps holding it, so the next operation need not read it again.
    known: Rc<RefCell<Known>>,
}

thread_local! {
    static LOCKS: RefCell<BTreeMap<String, Rc<RefCell<Local>>>> = RefCell::default();
}

/// A workspace's lock in this tab.
pub(crate) struct Workspace {
    name: String,
    local: Rc<RefCell<Local>>,
}

/// This tab's turn at a workspace; dropping it passes the turn on.
pub(crate) struct Turn {
    local: Rc<RefCell<Local>>,
}

impl Workspace {
    /// The lock `name` as this tab shares it.
    pub(crate) fn named(name: String) -> Self {
        let local =
            LOCKS.with(|locks| Rc::clone(locks.borrow_mut().entry(name.clone()).or_default()));
        Workspace { name, local }
    }

    /// Waits for this tab's turn (behind its other operations on the workspace), taking
    /// the Web Lock when the tab does not hold it already.
    pub(crate) async fn enter(&self) -> Result<Turn, JsValue> {
        loop {
            let wait = {
                let mut local = self.local.borrow_mut();
                if !local.busy {
                    local.busy = true;
                    local.generation += 1;
                    None
                } else {
                    let mut go = None;
                    let promise = Promise::new(&mut |resolve, _| go = Some(resolve));
                    if let Some(go) = go {
                        local.waiting.push_back(go);
                    }
                    Some(promise)
                }
            };
            match wait {
                Some(promise) => {
                    JsFuture::from(promise).await?;
                }
                None => break,
            }
        }
        let turn = Turn {
            local: Rc::clone(&self.local),
        };
        if self.local.borrow().held.is_none() {
            // `turn` is dropped on failure, passing the turn on.
            let held = acquire(&self.name).await?;
            let mut local = self.local.borrow_mut();
            // Other tabs may have written while this one did not hold the lock.
            local.known.borrow_mut().clear();
            local.held = held;
        }
        Ok(turn)
    }
}

impl Turn {
    /// What earlier operations of this tab left known about the workspace, while the tab
    /// holds its Web Lock (no other tab writes it meanwhile); `None` without Web Locks.
    pub(crate) fn known(&self) -> Option<Rc<RefCell<Known>>> {
        let local = self.local.borrow();
        local.held.as_ref().map(|_| Rc::clone(&local.known))
    }

    /// The operation wrote to `workspace`: other tabs hear of it on `channel` once this
    /// tab is idle (one notice for a burst of writes).
    pub(crate) fn wrote(&self, channel: Rc<web_sys::BroadcastChannel>, workspace: String) {
        self.local.borrow_mut().notice = Some((channel, workspace));
    }
}

/// Lets the Web Lock go and posts the pending notice.
fn go_idle(local: &RefCell<Local>) {
    let (held, notice) = {
        let mut local = local.borrow_mut();
        local.known.borrow_mut().clear();
        (local.held.take(), local.notice.take())
    };
    drop(held);
    if let Some((channel, workspace)) = notice {
        notify(&channel, &workspace);
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let next = {
            let mut local = self.local.borrow_mut();
            local.busy = false;
            local.waiting.pop_front()
        };
        if let Some(next) = next {
            let _ = next.call0(&JsValue::UNDEFINED);
            return;
        }
        // Once the tab has been idle for a task: let the Web Lock go, tell the others.
        let generation = self.local.borrow().generation;
        let weak = Rc::downgrade(&self.local);
        let idle = Closure::once_into_js(move || {
            let Some(local) = weak.upgrade() else { return };
            if local.borrow().busy || local.borrow().generation != generation {
                return;
            }
            go_idle(&local);
        });
        let set_timeout = Reflect::get(&js_sys::global(), &"setTimeout".into())
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        match set_timeout {
            Some(set_timeout) => {
                let _ = set_timeout.call2(&JsValue::UNDEFINED, &idle, &JsValue::from(0));
            }
            // No timers: now.
            None => go_idle(&self.local),
        }
    }
}

/// Forgets what this tab knew of the database `db`: it was deleted or changed under it.
pub(crate) fn forget(db: &str) {
    let prefix = lock_name(db, "");
    LOCKS.with(|locks| {
        // A name of another database may share the prefix: forgetting it too is harmless.
        let locks = locks.borrow();
        let named = locks.range(prefix.clone()..);
        for (_, local) in named.take_while(|(name, _)| name.starts_with(&prefix)) {
            local.borrow().known.borrow_mut().clear();
        }
    });
}

/// Posts `{workspace}` on the database's channel, so other tabs can refresh.
pub(crate) fn notify(channel: &web_sys::BroadcastChannel, workspace: &str) {
    let message = js_sys::Object::new();
    let _ = Reflect::set(&message, &"workspace".into(), &workspace.into());
    // A closed channel (the database was closed) just drops the notice.
    let _ = channel.post_message(&message);
}
