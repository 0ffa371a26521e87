//! `bbrun --info`: every tunable of the library and of bbrun with its value and where the value came from,
//! as an aligned table.

use billboard::transport::routes::{route_between, Route, RouteChoice};
use billboard::tunables::{self, Switch, Tunable};

pub fn print() {
    let ours: [&Tunable; 1] = [&crate::agent_link::GREETING_WAIT];
    let all: Vec<&Tunable> = tunables::all().chain(ours).chain(mpi::tunables()).chain(pvm::task::tunables()).collect();
    print!("{}", table(&all));
    print!("\n{}", switches_text(&tunables::switches().collect::<Vec<_>>()));
}

/// The collective algorithm switches: each with the algorithm forced here ("auto" when the
/// library's table chooses) and the algorithms it may name.
fn switches_text(switches: &[&Switch]) -> String {
    let width = switches.iter().map(|s| s.env.len()).max().unwrap_or(0);
    let mut text = String::from("COLLECTIVE ALGORITHMS (BB_COLL_<NAME>=<algorithm> forces one for every call; unset: the table in coll/select.rs)\n");
    for s in switches {
        text.push_str(&format!("{:<width$}  {:<17}  {}: {}\n", s.env, s.shown(), s.algorithms.join("|"), s.doc));
    }
    text
}

/// The route between every pair of ranks of `placement`, as the library will choose it
/// (`BB_ROUTES`, `BB_TCP_IF` as set here): a matrix for small jobs, host pairs for large ones.
pub fn print_routes(placement: &crate::hosts::Placement) {
    match RouteChoice::from_env() {
        Ok(choice) => print!("\n{}", routes_text(placement, choice)),
        Err(e) => eprintln!("bbrun: {e}"),
    }
}

fn routes_text(placement: &crate::hosts::Placement, choice: RouteChoice) -> String {
    let host_of = &placement.host_of;
    let n = host_of.len();
    let tcp_if =
        std::env::var("BB_TCP_IF").unwrap_or_else(|_| "(default: every interface but loopback and bridges)".into());
    let mut text = format!(
        "ROUTES for {n} ranks on {} hosts (BB_ROUTES={}, BB_TCP_IF={tcp_if}): shm = shared-memory billboard, tcp = TCP, udp = reliable UDP\n",
        placement.hosts.len(),
        match choice {
            RouteChoice::Auto => "auto",
            RouteChoice::Tcp => "tcp",
            RouteChoice::Udp => "udp",
        }
    );
    let mark = |r: Route| match r {
        Route::SelfRoute => "-",
        Route::SharedMemory => "shm",
        Route::Tcp => "tcp",
        Route::Udp => "udp",
    };
    if n <= 16 {
        text.push_str("rank host                  ");
        text.extend((0..n).map(|b| format!("{b:>4}")));
        text.push('\n');
        for a in 0..n {
            text.push_str(&format!("{a:>4} {:<21} ", placement.hosts[host_of[a]]));
            text.extend((0..n).map(|b| format!("{:>4}", mark(route_between(a, b, host_of, choice)))));
            text.push('\n');
        }
    } else {
        for (h, name) in placement.hosts.iter().enumerate() {
            let ranks = placement.ranks_on(h);
            let inside = if ranks.len() > 1 { mark(route_between(ranks[0], ranks[1], host_of, choice)) } else { "-" };
            let remote = mark(choice.remote());
            text.push_str(&format!("host {name}: ranks {:?}, {inside} among them, {remote} to other hosts\n", ranks));
        }
    }
    text
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
    fn routes_follow_the_hosts_and_bb_routes() {
        let p = crate::hosts::Placement { hosts: vec!["a".into(), "b".into()], host_of: vec![0, 0, 1] };
        let auto = routes_text(&p, RouteChoice::Auto);
        let rows: Vec<&str> = auto.lines().skip(2).collect();
        assert!(rows[0].ends_with("   - shm tcp") && rows[2].ends_with(" tcp tcp   -"), "{auto}");
        let tcp = routes_text(&p, RouteChoice::Tcp);
        assert!(tcp.lines().nth(2).unwrap().ends_with("   - tcp tcp"), "{tcp}");
        // UDP takes every route but a rank's own, on one host too, as the library does.
        let udp = routes_text(&p, RouteChoice::parse("udp").unwrap());
        assert!(udp.contains("BB_ROUTES=udp") && udp.lines().nth(2).unwrap().ends_with("   - udp udp"), "{udp}");
        assert!(RouteChoice::parse("carrier-pigeon").is_err());
    }

    #[test]
    fn switches_list_their_algorithms() {
        static S: Switch = Switch::new("BB_TEST_SWITCH_UNSET", &["post", "tree"], "a choice");
        let text = switches_text(&[&S]);
        assert!(text.lines().nth(1).unwrap().starts_with("BB_TEST_SWITCH_UNSET  auto"), "{text}");
        assert!(text.contains("post|tree: a choice"), "{text}");
    }

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
