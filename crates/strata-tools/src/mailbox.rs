//! Messages a tool's work posts to the conversation after its call returned (a background
//! child agent's answer). The tool takes a [`Posting`] while its call runs and posts through
//! it later; whoever drives the loop (the session runtime) holds the [`Inbox`] and delivers
//! each message at the end of the conversation: at the next turn boundary of a run, or as a
//! run of its own when the session is idle. The work's progress travels the same way, as
//! updates of the call that started it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::ToolOutput;

/// What arrives in an [`Inbox`].
#[derive(Debug, Clone, PartialEq)]
pub enum Posted {
    /// A message for the conversation (a user-role message at its end).
    Message(String),
    /// Progress of the work a call started, as that call's partial output (it may come after
    /// the call's result: the work outlived it).
    Update {
        /// The tool call's id.
        id: String,
        /// The partial output.
        output: ToolOutput,
    },
    /// A record about the work for front ends (a child agent's event), with its own `type`.
    Record(serde_json::Value),
}

/// The posting side, handed to tool calls in [`crate::ToolContext::mailbox`].
#[derive(Debug, Clone)]
pub struct Mailbox {
    sender: UnboundedSender<Posted>,
    pending: Arc<AtomicUsize>,
}

/// The receiving side: the messages posted, and how many postings are still to come.
#[derive(Debug)]
pub struct Inbox {
    receiver: UnboundedReceiver<Posted>,
    pending: Arc<AtomicUsize>,
}

/// One message promised to the conversation. Posting it, or dropping it unposted, ends the
/// promise: a dropped one posts `unposted`, so the driver never waits for a message that
/// cannot come.
#[derive(Debug)]
pub struct Posting {
    mailbox: Mailbox,
    unposted: Option<String>,
}

impl Mailbox {
    /// A mailbox and its inbox.
    pub fn channel() -> (Self, Inbox) {
        let (sender, receiver) = unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        (
            Self {
                sender,
                pending: Arc::clone(&pending),
            },
            Inbox { receiver, pending },
        )
    }

    /// Promises one message; `unposted` is what arrives if the promise is dropped unkept.
    pub fn promise(&self, unposted: impl Into<String>) -> Posting {
        self.pending.fetch_add(1, Ordering::SeqCst);
        Posting {
            mailbox: self.clone(),
            unposted: Some(unposted.into()),
        }
    }

    /// Sends a record for front ends.
    pub fn record(&self, record: serde_json::Value) {
        let _ = self.sender.send(Posted::Record(record));
    }

    /// Sends progress of the work call `id` started.
    pub fn update(&self, id: impl Into<String>, output: ToolOutput) {
        let _ = self.sender.send(Posted::Update {
            id: id.into(),
            output,
        });
    }
}

impl Posting {
    /// Posts the message.
    pub fn post(mut self, text: impl Into<String>) {
        self.unposted = None;
        self.send(text.into());
    }

    /// Resolves once the inbox is gone (the session ended): the work may stop.
    pub async fn closed(&self) {
        self.mailbox.sender.closed().await;
    }

    fn send(&self, text: String) {
        // Sent before the count drops: a driver that sees nothing pending finds it queued.
        let _ = self.mailbox.sender.send(Posted::Message(text));
        self.mailbox.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Posting {
    fn drop(&mut self) {
        if let Some(text) = self.unposted.take() {
            self.send(text);
        }
    }
}

impl Inbox {
    /// The next posting (waits; `None` only once every mailbox is dropped).
    pub async fn recv(&mut self) -> Option<Posted> {
        self.receiver.recv().await
    }

    /// A posting already sent, without waiting.
    pub fn try_recv(&mut self) -> Option<Posted> {
        self.receiver.try_recv().ok()
    }

    /// Postings promised and not yet posted.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    /// Nothing is promised and nothing waits to be read.
    pub fn is_idle(&self) -> bool {
        self.pending() == 0 && self.receiver.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_posting_arrives_and_a_dropped_one_arrives_as_its_fallback() {
        let (mailbox, mut inbox) = Mailbox::channel();
        assert!(inbox.is_idle());
        let kept = mailbox.promise("lost");
        let dropped = mailbox.promise("ended without an answer");
        assert_eq!(inbox.pending(), 2);
        mailbox.update("call_1", ToolOutput::text("turn 1"));
        kept.post("the answer");
        drop(dropped);
        assert_eq!(inbox.pending(), 0);
        assert!(!inbox.is_idle(), "postings wait to be read");
        assert_eq!(
            inbox.recv().await,
            Some(Posted::Update {
                id: "call_1".into(),
                output: ToolOutput::text("turn 1")
            })
        );
        let message = |text: &str| Some(Posted::Message(text.into()));
        assert_eq!(inbox.recv().await, message("the answer"));
        assert_eq!(inbox.try_recv(), message("ended without an answer"));
        assert!(inbox.is_idle());
    }

    #[tokio::test]
    async fn a_posting_hears_that_the_inbox_is_gone() {
        let (mailbox, inbox) = Mailbox::channel();
        let posting = mailbox.promise("x");
        drop(inbox);
        tokio::time::timeout(std::time::Duration::from_secs(5), posting.closed())
            .await
            .unwrap();
    }
}
