//! Messages waiting for a run: steering (delivered after the running tool batch) and
//! follow-ups (delivered when the run would end), each handed over as its mode says (Pi's
//! `steeringMode` / `followUpMode`). One implementation for the runtime and every front end
//! that queues messages itself.

use std::collections::VecDeque;

use strata_agent::Control;

use crate::op::UserInput;

/// How queued messages are handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// Everything queued at once.
    All,
    /// One message per turn (steering) or per run end (follow-up).
    #[default]
    OneAtATime,
}

impl QueueMode {
    /// Parses Pi's names (`all`, `one-at-a-time`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "all" => Some(Self::All),
            "one-at-a-time" => Some(Self::OneAtATime),
            _ => None,
        }
    }

    /// Pi's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::OneAtATime => "one-at-a-time",
        }
    }
}

/// The texts waiting, oldest first (Pi's `queue_update` and `clear_queue` answer).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuedTexts {
    /// Steering messages not yet delivered.
    pub steering: Vec<String>,
    /// Follow-up messages.
    pub follow_up: Vec<String>,
}

/// Steering and follow-up messages waiting. Steering messages are handed to the agent's
/// [`Control`] while a run goes on, as many as the steering mode allows at a time; the
/// agent reports each delivery ([`strata_agent::AgentEvent::SteeringDelivered`]).
#[derive(Debug, Default)]
pub struct MessageQueue {
    steering: VecDeque<UserInput>,
    /// How many of `steering` the agent's control holds.
    handed_over: usize,
    follow_ups: VecDeque<UserInput>,
    /// How steering messages are handed over.
    pub steering_mode: QueueMode,
    /// How follow-up messages are handed over.
    pub follow_up_mode: QueueMode,
}

impl MessageQueue {
    /// Queues a steering message (handed over at once when `control` is given: a run goes on).
    pub fn steer(&mut self, input: UserInput, control: Option<&Control>) {
        self.steering.push_back(input);
        if let Some(control) = control {
            self.feed(control);
        }
    }

    /// Queues a follow-up message.
    pub fn follow_up(&mut self, input: UserInput) {
        self.follow_ups.push_back(input);
    }

    /// Hands queued steering messages to the agent as the mode allows (at a run's start, and
    /// after each delivery).
    pub fn feed(&mut self, control: &Control) {
        let target = match self.steering_mode {
            QueueMode::All => self.steering.len(),
            QueueMode::OneAtATime => self.steering.len().min(1),
        };
        while self.handed_over < target {
            if let Some(input) = self.steering.get(self.handed_over) {
                control.steer_with_images(input.text.clone(), input.images.clone());
            }
            self.handed_over += 1;
        }
    }

    /// The agent delivered `count` steering messages: they leave the queue, the next are
    /// handed over.
    pub fn delivered(&mut self, count: usize, control: &Control) {
        let delivered = count.min(self.handed_over);
        self.steering.drain(..delivered);
        self.handed_over -= delivered;
        self.feed(control);
    }

    /// The next follow-up to run, as the mode allows: for `all`, every text joined by blank
    /// lines with every image in order.
    pub fn next_follow_up(&mut self) -> Option<UserInput> {
        match self.follow_up_mode {
            QueueMode::OneAtATime => self.follow_ups.pop_front(),
            QueueMode::All if self.follow_ups.is_empty() => None,
            QueueMode::All => {
                let all: Vec<UserInput> = self.follow_ups.drain(..).collect();
                let text = all
                    .iter()
                    .map(|q| q.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                let images = all.into_iter().flat_map(|q| q.images).collect();
                Some(UserInput { text, images })
            }
        }
    }

    /// Drops everything waiting (also what the agent's control holds); returns the texts.
    pub fn clear(&mut self, control: &Control) -> QueuedTexts {
        control.clear_steering();
        let texts = self.texts();
        self.steering.clear();
        self.handed_over = 0;
        self.follow_ups.clear();
        texts
    }

    /// The texts waiting.
    pub fn texts(&self) -> QueuedTexts {
        let texts = |queue: &VecDeque<UserInput>| queue.iter().map(|q| q.text.clone()).collect();
        QueuedTexts {
            steering: texts(&self.steering),
            follow_up: texts(&self.follow_ups),
        }
    }

    /// Messages waiting, steering and follow-up.
    pub fn len(&self) -> usize {
        self.steering.len() + self.follow_ups.len()
    }

    /// Nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Follow-ups waiting.
    pub fn follow_ups(&self) -> usize {
        self.follow_ups.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_session::ImageContent;

    fn input(text: &str, images: &[&str]) -> UserInput {
        UserInput {
            text: text.to_owned(),
            images: images
                .iter()
                .map(|data| ImageContent {
                    data: (*data).to_owned(),
                    mime_type: "image/png".to_owned(),
                    ..ImageContent::default()
                })
                .collect(),
        }
    }

    #[test]
    fn one_at_a_time_steering_hands_over_one_message_per_delivery() {
        let control = Control::default();
        let mut queue = MessageQueue::default();
        queue.steer(input("a", &[]), Some(&control));
        queue.steer(input("b", &[]), Some(&control));
        assert_eq!(control.clear_steering(), 1, "only the first is handed over");
        // Put it back as the agent would hold it.
        control.steer_with_images("a", Vec::new());
        queue.delivered(1, &control);
        assert_eq!(queue.texts().steering, ["b"]);
        queue.delivered(1, &control);
        assert!(queue.is_empty());
    }

    #[test]
    fn all_steering_hands_over_everything_at_once() {
        let control = Control::default();
        let mut queue = MessageQueue {
            steering_mode: QueueMode::All,
            ..MessageQueue::default()
        };
        queue.steer(input("a", &[]), None);
        queue.steer(input("b", &[]), None);
        queue.feed(&control);
        assert_eq!(control.clear_steering(), 2);
    }

    #[test]
    fn all_follow_ups_join_their_texts_and_keep_every_image_in_order() {
        let mut queue = MessageQueue {
            follow_up_mode: QueueMode::All,
            ..MessageQueue::default()
        };
        queue.follow_up(input("one", &["A"]));
        queue.follow_up(input("two", &[]));
        queue.follow_up(input("three", &["B", "C"]));
        assert_eq!(queue.texts().follow_up, ["one", "two", "three"]);
        let next = queue.next_follow_up().unwrap();
        assert_eq!(next, input("one\n\ntwo\n\nthree", &["A", "B", "C"]));
        assert_eq!(queue.next_follow_up(), None);
    }

    #[test]
    fn clearing_returns_the_texts_and_empties_the_agents_queue_too() {
        let control = Control::default();
        let mut queue = MessageQueue::default();
        queue.steer(input("s", &[]), Some(&control));
        queue.follow_up(input("f", &[]));
        let texts = queue.clear(&control);
        assert_eq!(
            texts,
            QueuedTexts {
                steering: vec!["s".into()],
                follow_up: vec!["f".into()],
            }
        );
        assert_eq!(control.clear_steering(), 0);
        assert!(queue.is_empty());
    }
}
