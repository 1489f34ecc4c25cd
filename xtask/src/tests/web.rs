use super::class_members;

const GLUE: &str = "export class Spool {\n    static __wrap(ptr) {\n        x();\n    }\n    /**\n     * Doc.\n     */\n    appendEntry(workspace, key) {\n        return 1;\n    }\n    get name() {\n    }\n    static open(dbName) {\n    }\n}\nexport class Other {\n    stray() {\n    }\n}\n";

const DTS: &str = "export class Spool {\n    private constructor();\n    /**\n     * Doc.\n     */\n    appendEntry(workspace: string, key: string): Promise<Entry>;\n    static open(dbName: string): Promise<Spool>;\n    readonly name: string;\n}\n";

#[test]
fn test_class_members_read_the_same_names_from_glue_and_declarations() {
    let glue = class_members(GLUE, "Spool");
    assert_eq!(
        glue.iter().map(String::as_str).collect::<Vec<_>>(),
        ["appendEntry", "name", "open"]
    );
    assert_eq!(class_members(DTS, "Spool"), glue);
}

#[test]
fn test_a_method_missing_from_the_declarations_is_found() {
    let glue = class_members(
        &GLUE.replace("    get name", "    branch() {\n    }\n    get name"),
        "Spool",
    );
    let declared = class_members(DTS, "Spool");
    assert_eq!(
        glue.difference(&declared).collect::<Vec<_>>(),
        [&"branch".to_owned()]
    );
}
