use super::*;
use crate::types::Session;

fn table(json: &str) -> Result<PriceTable, crate::Error> {
    PriceTable::parse(json)
}

const ONE: &str = r#"{"prices": [{"models": ["m-1", "m-1-alias"], "input": 2.0, "output": 10.0,
    "cache_read": 0.2, "cache_write": 2.5, "date": "2026-01-02", "source": "https://example.test/p"}]}"#;

#[test]
fn test_builtin_table_parses_and_prices_the_models_of_the_import_fixtures() {
    let builtin = PriceTable::builtin();
    for model in [
        "claude-opus-4-5-20251101",
        "claude-sonnet-4-5-20250929",
        "gpt-5-codex",
        "gpt-5.1-codex-max",
        "gpt-5.2-codex",
    ] {
        let price = builtin
            .price(model)
            .unwrap_or_else(|| panic!("{model} is priced"));
        assert!(price.source.starts_with("https://"), "{model}: {price:?}");
        assert!(
            price.input > 0.0 && price.output > price.input,
            "{model}: {price:?}"
        );
    }
}

#[test]
fn test_cost_is_each_figure_at_its_rate_per_million() {
    let t = table(ONE).unwrap();
    let usage = TurnUsage {
        model: "m-1-alias".into(),
        input_tokens: 1_000_000,
        output_tokens: 500_000,
        cache_read_tokens: 2_000_000,
        cache_write_tokens: 100_000,
    };
    let cost = t.cost(&usage).unwrap();
    assert!((cost - (2.0 + 5.0 + 0.4 + 0.25)).abs() < 1e-12, "{cost}");
    assert_eq!(t.cost(&TurnUsage::new("other", 10, 10)), None);
    assert_eq!(
        t.cost(&TurnUsage::new("other", 0, 0)),
        Some(0.0),
        "no tokens cost nothing"
    );
}

#[test]
fn test_bad_tables_are_invalid_arguments_saying_why() {
    let cases = [
        ("[]", "is not a price table"),
        (r#"{"prices": [{"models": ["a"]}]}"#, "is not a price table"),
        (
            &ONE.replace("\"input\": 2.0", "\"input\": -1"),
            "input is -1",
        ),
        (
            &ONE.replace("[\"m-1\", \"m-1-alias\"]", "[]"),
            "lists no model",
        ),
        (&ONE.replace("m-1-alias", "m-1"), "priced twice"),
        (&ONE.replace("2026-01-02", "Jan 2"), "is not YYYY-MM-DD"),
        (&ONE.replace("https://example.test/p", " "), "has no source"),
        (&ONE.replace("\"date\"", "\"dated\""), "unknown field"),
    ];
    for (json, why) in cases {
        let e = table(json).expect_err(json);
        assert_eq!(e.code(), "invalid_argument", "{json}");
        assert!(e.to_string().contains(why), "{json}: {e}");
    }
}

#[test]
fn test_charge_estimates_and_never_touches_a_billed_cost() {
    let t = table(ONE).unwrap();
    let mut s = Session::new("agent:a:b", "s1", 1);
    charge(&mut s, &TurnUsage::new("m-1", 1_000_000, 0), &t);
    assert_eq!(
        (s.cost_source.as_str(), s.estimated_cost_usd),
        ("estimated", 2.0)
    );
    assert_eq!(
        (s.total_cost_usd, s.estimated_cost_component_usd),
        (2.0, 2.0)
    );
    charge(&mut s, &TurnUsage::new("unknown", 5, 5), &t);
    assert_eq!(s.missing_cost_entries, 1);
    assert_eq!(s.total_cost_usd, 2.0);

    let mut billed = Session::new("agent:a:c", "s2", 1);
    billed.billed_cost_usd = 1.5;
    billed.total_cost_usd = 1.5;
    billed.cost_source = "billed".into();
    charge(&mut billed, &TurnUsage::new("m-1", 0, 100_000), &t);
    assert_eq!(
        billed.billed_cost_usd, 1.5,
        "a billed figure is never overwritten"
    );
    assert_eq!(billed.cost_source, "mixed");
    assert!((billed.total_cost_usd - 2.5).abs() < 1e-12);

    refund(&mut s, &TurnUsage::new("m-1", 1_000_000, 0), &t);
    refund(&mut s, &TurnUsage::new("unknown", 5, 5), &t);
    assert_eq!((s.estimated_cost_usd, s.missing_cost_entries), (0.0, 0));
}
