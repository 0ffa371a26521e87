//! The command that starts `bbrun --agent` on a remote host (`--launcher TEMPLATE`).
//!
//! The template is split on white space. A word holding `{host}` has it replaced by the host's
//! name (`ip netns exec {host}`); a template without `{host}` gets the host as one more word
//! (`ssh` becomes `ssh HOST`, `ssh -p 2222` becomes `ssh -p 2222 HOST`). The agent's command,
//! this very `bbrun` binary's absolute path and `--agent`, comes last: the same path must hold
//! bbrun on every host, as with Hydra's proxy. `ssh` and `rsh` hand their command to a remote
//! shell, so for them the agent's words are quoted for `sh`; other launchers `exec` them as they
//! are. The job secret is never part of this command (`ps` shows command lines to everyone): the
//! agent reads it from its stdin.

/// The default: what MPICH and Open MPI use too.
pub const DEFAULT: &str = "ssh";

#[derive(Debug, Clone)]
pub struct Launcher {
    words: Vec<String>,
}

impl Launcher {
    pub fn parse(template: &str) -> Result<Launcher, String> {
        let words: Vec<String> = template.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return Err("--launcher: an empty command template".into());
        }
        if words[0].contains("{host}") {
            return Err(format!("--launcher {template:?}: the first word must be a command, not {{host}}"));
        }
        Ok(Launcher { words })
    }

    /// The full command line (program first) that runs `agent` on `host`.
    pub fn command(&self, host: &str, agent: &[String]) -> Vec<String> {
        let mut cmd: Vec<String> = self.words.iter().map(|w| w.replace("{host}", host)).collect();
        if !self.words.iter().any(|w| w.contains("{host}")) {
            cmd.push(host.to_owned());
        }
        let program = self.words[0].rsplit('/').next().unwrap_or_default();
        if program == "ssh" || program == "rsh" {
            cmd.extend(agent.iter().map(|w| shell_quote(w)));
        } else {
            cmd.extend(agent.iter().cloned());
        }
        cmd
    }
}

/// `word` as one `sh` word.
fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> Vec<String> {
        vec!["/opt/bb/bin/bbrun".into(), "--agent".into()]
    }

    #[test]
    fn ssh_gets_the_host_as_a_word() {
        let l = Launcher::parse(DEFAULT).unwrap();
        assert_eq!(l.command("node2", &agent()), ["ssh", "node2", "/opt/bb/bin/bbrun", "--agent"]);
        let l = Launcher::parse("ssh -p 2222").unwrap();
        assert_eq!(l.command("n", &agent()), ["ssh", "-p", "2222", "n", "/opt/bb/bin/bbrun", "--agent"]);
    }

    #[test]
    fn templates_expand_host() {
        let l = Launcher::parse("ip netns exec {host}").unwrap();
        assert_eq!(l.command("ns1", &agent()), ["ip", "netns", "exec", "ns1", "/opt/bb/bin/bbrun", "--agent"]);
        let l = Launcher::parse("docker exec bb-{host}").unwrap();
        assert_eq!(l.command("a", &agent())[2], "bb-a");
    }

    #[test]
    fn agent_words_are_quoted_for_remote_shells_only() {
        let odd = vec!["/opt/my bb/bbrun".to_string(), "--agent".into()];
        let l = Launcher::parse("/usr/bin/ssh").unwrap();
        assert_eq!(l.command("h", &odd)[2], "'/opt/my bb/bbrun'");
        let l = Launcher::parse("ip netns exec {host}").unwrap();
        assert_eq!(l.command("h", &odd)[4], "/opt/my bb/bbrun");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn bad_templates() {
        assert!(Launcher::parse("  ").is_err());
        assert!(Launcher::parse("{host} x").is_err());
    }
}
