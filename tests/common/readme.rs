//! README as the doc tests read it: its text and the tables they hold
//! against the code's own tables.

/// README.md of this checkout.
pub fn text() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md")
}

/// The (first, second) cells of the table with header line `header` under
/// the section `heading`, trimmed, as written (code marks kept).
pub fn table_rows(readme: &str, heading: &str, header: &str) -> Vec<(String, String)> {
    let section = readme
        .split(&format!("{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("README has no '{heading}' section"));
    // Up to the next heading (`##` or `###`; a `#` line may be a comment).
    let section = section.split("\n##").next().unwrap_or(section);
    let table = section
        .split(header)
        .nth(1)
        .unwrap_or_else(|| panic!("'{heading}' has no '{header}' table"));
    table
        .lines()
        .skip(2) // the rest of the header line and |---|---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            let cell = |i: usize| cells.get(i).map_or("", |c| c.trim()).to_string();
            (cell(1), cell(2))
        })
        .collect()
}
