//! Matching (placeholder until the sans-IO matcher lands).

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub context: u32,
    pub source: u32,
    pub tag: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub context: u32,
    pub source: Option<u32>,
    pub tag: Option<i32>,
}

impl Pattern {
    pub fn matches(&self, env: &Envelope) -> bool {
        self.context == env.context
            && self.source.is_none_or(|s| s == env.source)
            && self.tag.is_none_or(|t| t == env.tag)
    }
}

pub type RecvId = u32;

pub struct Matcher<M> {
    posted: VecDeque<(Pattern, RecvId)>,
    unexpected: VecDeque<(Envelope, M)>,
}

impl<M> Default for Matcher<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> Matcher<M> {
    pub fn new() -> Self {
        Matcher { posted: VecDeque::new(), unexpected: VecDeque::new() }
    }
    pub fn post(&mut self, pattern: Pattern, id: RecvId) -> Option<(Envelope, M)> {
        if let Some(i) = self.unexpected.iter().position(|(e, _)| pattern.matches(e)) {
            return self.unexpected.remove(i);
        }
        self.posted.push_back((pattern, id));
        None
    }
    pub fn arrive_with(&mut self, env: Envelope, msg: impl FnOnce() -> M) -> Option<RecvId> {
        if let Some(i) = self.posted.iter().position(|(p, _)| p.matches(&env)) {
            return self.posted.remove(i).map(|(_, id)| id);
        }
        self.unexpected.push_back((env, msg()));
        None
    }
    pub fn probe(&self, pattern: &Pattern) -> Option<(&Envelope, &M)> {
        self.unexpected.iter().find(|(e, _)| pattern.matches(e)).map(|(e, m)| (e, m))
    }
    pub fn take(&mut self, pattern: &Pattern) -> Option<(Envelope, M)> {
        let i = self.unexpected.iter().position(|(e, _)| pattern.matches(e))?;
        self.unexpected.remove(i)
    }
    pub fn cancel(&mut self, id: RecvId) -> bool {
        match self.posted.iter().position(|(_, i)| *i == id) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }
}
