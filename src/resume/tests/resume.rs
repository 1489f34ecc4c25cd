use super::*;

fn run(at: u64, token: &str, project: &str, task: &str, status: &str) -> RunRecord {
    RunRecord {
        agent_type: "codex".into(),
        session_id: token.into(),
        project_id: project.into(),
        task_id: task.into(),
        status: status.into(),
        updated_at: at,
        ..RunRecord::default()
    }
}

fn tags(keys: &BTreeSet<Vec<u8>>) -> Vec<u8> {
    keys.iter().map(|k| k[0]).collect()
}

#[test]
fn test_a_newer_failure_takes_a_token_out_of_the_live_indexes_only() {
    let done = run(5, "tok", "p1", "t1", "done");
    assert_eq!(tags(&index_keys(std::slice::from_ref(&done))), b"dpwz");
    let failed = run(6, "tok", "p1", "t2", "failed");
    assert_eq!(tags(&index_keys(&[done.clone(), failed])), b"dp");
    // A failure in another project kills the token overall, not in `p1`.
    let elsewhere = run(6, "tok", "p2", "t2", "failed");
    assert_eq!(tags(&index_keys(&[done.clone(), elsewhere])), b"dpz");
    // Ties: the failure wins.
    let tie = run(5, "tok", "p1", "t3", "hard_timeout");
    assert_eq!(tags(&index_keys(&[done, tie])), b"dp");
    // Synthetic ids and unfinished runs are never indexed.
    let synthetic = run(9, "codex:p1:t9", "p1", "t9", "done");
    assert!(index_keys(&[synthetic, run(9, "tok", "p1", "t4", "working")]).is_empty());
}

#[test]
fn test_index_keys_order_newest_last_within_an_agent() {
    let first = |r: RunRecord| index_keys(&[r]).into_iter().next().unwrap_or_default();
    assert!(first(run(5, "b", "p", "t", "done")) < first(run(6, "a", "p", "t", "done")));
    assert!(first(run(5, "a", "p", "t", "done")) < first(run(5, "b", "p", "t", "done")));
}
