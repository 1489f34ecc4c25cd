//! Several tabs on one database: each operation runs under an exclusive Web Lock per
//! database and workspace, and every operation that wrote tells the other tabs through a
//! `BroadcastChannel`.
//!
//! The lock is not what keeps data safe — the core's compare-and-set commits already make
//! concurrent writers from any number of tabs lose nothing — it keeps tabs from racing
//! each other into retries. Where the browser has no Web Locks (`navigator.locks`
//! missing) operations simply run unlocked.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// The lock and channel names of a database.
pub(crate) fn lock_name(db: &str, workspace: &str) -> String {
    format!("spool:{db}:{workspace}")
}

/// The channel name of a database.
pub(crate) fn channel_name(db: &str) -> String {
    format!("spool:{db}")
}

/// A held Web Lock; [`Held::release`] lets it go (so does dropping it).
pub(crate) struct Held {
    release: Option<Function>,
    done: Option<Promise>,
}

impl Held {
    /// Releases the lock and waits until the browser has let it go.
    pub(crate) async fn release(mut self) {
        self.let_go();
        if let Some(done) = self.done.take() {
            // The lock request's own promise: settles once the lock is released.
            let _ = JsFuture::from(done).await;
        }
    }

    fn let_go(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.call0(&JsValue::UNDEFINED);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.let_go();
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
    let done: Promise = request.call2(&locks, &name.into(), &on_grant)?.dyn_into()?;
    JsFuture::from(granted).await?;
    Ok(Some(Held {
        release,
        done: Some(done),
    }))
}

/// Posts `{workspace}` on the database's channel, so other tabs can refresh.
pub(crate) fn notify(channel: &web_sys::BroadcastChannel, workspace: &str) {
    let message = js_sys::Object::new();
    let _ = Reflect::set(&message, &"workspace".into(), &workspace.into());
    // A closed channel (the database was closed) just drops the notice.
    let _ = channel.post_message(&message);
}
