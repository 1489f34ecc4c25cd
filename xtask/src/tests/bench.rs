use super::{Goal, Line, table};

fn figure(name: &str, value: f64, unit: &str, goal: Goal) -> Line {
    Line::Figure {
        name: name.into(),
        value,
        unit: unit.into(),
        goal,
    }
}

#[test]
fn test_figure_and_peer_lines_parse_and_human_lines_do_not() {
    assert_eq!(
        Line::parse("figure\tappend disk: component/raw\t0.93\tratio\t>= 0.9"),
        Some(Ok(figure(
            "append disk: component/raw",
            0.93,
            "ratio",
            Goal::AtLeast(0.9)
        )))
    );
    assert_eq!(
        Line::parse("figure\tbytes/entry: component\t180\tB/entry\t<=200"),
        Some(Ok(figure(
            "bytes/entry: component",
            180.0,
            "B/entry",
            Goal::AtMost(200.0)
        )))
    );
    assert_eq!(
        Line::parse("peer\tlanggraph put (disk)\t812.5\tappends/s\tappend disk: component"),
        Some(Ok(Line::Peer {
            name: "langgraph put (disk)".into(),
            value: 812.5,
            unit: "appends/s".into(),
            against: "append disk: component".into(),
        }))
    );
    assert_eq!(Line::parse("  component + SQLite :  900 appends/s"), None);
    assert_eq!(Line::parse("figures follow"), None);
    for bad in [
        "figure\tx\t1\tms",
        "figure\tx\tfast\tms\t-",
        "figure\tx\t1\tms\t~ 3",
        "figure\tx\t1\tms\t>= 0",
        "peer\tx\t1\tms",
    ] {
        assert!(
            matches!(Line::parse(bad), Some(Err(_))),
            "{bad:?} should be refused"
        );
    }
}

#[test]
fn test_table_rates_each_goal_and_compares_peers_by_direction() {
    let lines = vec![
        figure("ratio disk", 0.85, "ratio", Goal::AtLeast(0.9)),
        figure("bytes", 150.0, "B/entry", Goal::AtMost(200.0)),
        figure("rate", 1000.0, "appends/s", Goal::None),
        Line::Peer {
            name: "slow peer".into(),
            value: 250.0,
            unit: "appends/s".into(),
            against: "rate".into(),
        },
        Line::Peer {
            name: "small peer".into(),
            value: 100.0,
            unit: "B/entry".into(),
            against: "bytes".into(),
        },
        Line::Peer {
            name: "lonely peer".into(),
            value: 1.0,
            unit: "appends/s".into(),
            against: "absent".into(),
        },
    ];
    let text = table(&lines);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row {name} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(
        row("ratio disk")[2..],
        ["0.850", "ratio", ">=", "0.9", "0.94", "MISS"]
    );
    assert_eq!(
        row("bytes")[1..],
        ["150", "B/entry", "<=", "200", "0.75", "pass"]
    );
    assert_eq!(row("rate")[1..], ["1000", "appends/s", "-", "-", "-"]);
    let slow = row("slow peer");
    assert_eq!(slow[2..6], ["250", "appends/s", "1000", "4.00"]);
    assert!(slow.ends_with(&["Spool", "ahead"]), "{slow:?}");
    let small = row("small peer");
    assert_eq!(small[4], "150");
    assert!(small.ends_with(&["peer", "ahead"]), "{small:?}");
    assert!(row("lonely peer").ends_with(&["not", "run)"]));
    assert!(
        text.contains("goals: 1 met, 1 missed (3 figures)"),
        "{text}"
    );
}
