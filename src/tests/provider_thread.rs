use super::*;

fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).into())))
        .collect()
}

#[test]
fn test_bound_thread_is_resumed_and_nothing_else_is_said() {
    let plan = thread_plan(&config(&[("codex_thread_id", "thread-1")]), "codex", None);
    assert_eq!(plan.action, "resume");
    assert_eq!(plan.thread_id.as_deref(), Some("thread-1"));
    assert_eq!(plan.notice, None);
}

#[test]
fn test_dead_bound_thread_starts_fresh_with_one_notice() {
    let plan = thread_plan(
        &config(&[("codex_thread_id", "thread-1")]),
        "codex",
        Some("thread-1"),
    );
    assert_eq!(plan.action, "start");
    assert_eq!(plan.replaces.as_deref(), Some("thread-1"));
    assert_eq!(
        plan.notice.as_deref(),
        Some("Codex thread could not be resumed; starting a new one.")
    );
}

#[test]
fn test_dead_report_about_an_already_rotated_binding_resumes_the_new_one() {
    let plan = thread_plan(
        &config(&[("codex_thread_id", "thread-2")]),
        "codex",
        Some("thread-1"),
    );
    assert_eq!(plan.action, "resume");
    assert_eq!(plan.thread_id.as_deref(), Some("thread-2"));
    assert_eq!(plan.notice, None);
}

#[test]
fn test_bindings_are_per_agent_type() {
    let plan = thread_plan(
        &config(&[("codex_thread_id", "thread-1")]),
        "opencode",
        None,
    );
    assert_eq!(plan.action, "start");
    assert_eq!(plan.thread_id, None);
    let dead = thread_plan(
        &config(&[("opencode_thread_id", "t")]),
        "opencode",
        Some("t"),
    );
    assert_eq!(
        dead.notice.as_deref(),
        Some("opencode thread could not be resumed; starting a new one.")
    );
}
