use super::Tally;

#[test]
fn test_tally_reads_cargo_and_wasm_bindgen_result_lines() {
    let mut tally = Tally::default();
    tally.read("test result: ok. 17 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s");
    tally.read(
        "test result: FAILED. 8 passed; 2 failed; 0 ignored; 0 filtered out; finished in 0.11s",
    );
    tally.read("running 3 tests");
    tally.read("test result: ok. 0 passed; 0 failed; 1 ignored; 0 filtered out; finished in 0.00s");
    assert_eq!(
        tally,
        Tally {
            passed: 25,
            failed: 2
        }
    );
}
