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

#[test]
fn test_members_are_read_from_every_declaration_and_not_from_wrapped_lines() {
    // The generated interface wraps long signatures; read at the deeper indentation
    // (the custom section may be re-indented), the result type's line is no member.
    let dts = "export interface Spool {\n    readPage(workspace: string, args: Args):\n    \
               Promise<Page>;\n    get(): void;\n}\nexport interface Other {\n    no(): void;\n}\n\
               export interface Spool {\n    fork(): void;\n}\n";
    assert_eq!(
        super::members(dts, "export interface Spool {", "    ")
            .into_iter()
            .collect::<Vec<_>>(),
        ["fork", "get", "readPage"],
        "every declaration of the interface is read, and only those"
    );
}
