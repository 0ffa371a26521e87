//! `bbrun --info`: every tunable of the library and of bbrun with its value and where the value came from,
//! as an aligned table.

use billboard::tunables::{self, Tunable};

pub fn print() {
    let ours: [&Tunable; 1] = [&crate::agent_link::GREETING_WAIT];
    let all: Vec<&Tunable> = tunables::all().iter().copied().chain(ours).collect();
    print!("{}", table(&all));
}

fn table(all: &[&Tunable]) -> String {
    let rows: Vec<[String; 4]> = all
        .iter()
        .map(|t| {
            let (value, origin) = t.get_with_origin();
            [t.env.to_owned(), value.to_string(), origin.to_string(), t.doc.to_owned()]
        })
        .collect();
    let header = ["NAME", "VALUE", "ORIGIN", "DESCRIPTION"].map(str::to_owned);
    let mut widths = [0usize; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut text = String::new();
    for [name, value, origin, doc] in std::iter::once(&header).chain(&rows) {
        let [a, b, c] = widths;
        text.push_str(&format!("{name:<a$}  {value:>b$}  {origin:<c$}  {doc}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        static A: Tunable = Tunable::new("BB_TEST_A", 4096, "first");
        static LONGER: Tunable = Tunable::new("BB_TEST_LONGER_NAME", 7, "second");
        let text = table(&[&A, &LONGER]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let doc_column = lines[0].find("DESCRIPTION").unwrap();
        assert_eq!(lines[1].find("first"), Some(doc_column));
        assert_eq!(lines[2].find("second"), Some(doc_column));
        assert!(lines[1].contains("4096  default"));
    }
}
