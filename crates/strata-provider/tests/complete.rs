//! `Provider::complete` collects a stream, and refuses to invent a completion.

use async_trait::async_trait;
use futures::stream;
use strata_provider::{
    Event, EventStream, Message, Modality, Model, Prices, Protocol, Provider, ProviderError,
    Request, StopReason, StreamOptions, Usage,
};

struct Scripted(Vec<Event>);

#[async_trait]
impl Provider for Scripted {
    fn protocol(&self) -> Protocol {
        Protocol::AnthropicMessages
    }

    async fn stream(
        &self,
        _model: &Model,
        _request: &Request,
        _options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        Ok(Box::pin(stream::iter(self.0.clone())))
    }
}

fn model() -> Model {
    Model {
        provider: "anthropic".into(),
        id: "claude-sonnet-4-5".into(),
        name: "Claude Sonnet 4.5".into(),
        context_window: 200_000,
        max_output: 64_000,
        input: vec![Modality::Text, Modality::Image],
        reasoning: true,
        prices: Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write_5m: 3.75,
            cache_write_1h: 6.0,
            cache_storage: 0.0,
        },
    }
}

#[tokio::test]
async fn complete_returns_the_done_message_and_prices_it() {
    let usage = Usage {
        input: 100,
        output: 1_000,
        cache_read: 1_000_000,
        cache_write_5m: 0,
        cache_write_1h: 0,
        cache_storage: 0,
        cache_create: 0,
    };
    let message = Message::assistant_text("hi");
    let provider = Scripted(vec![
        Event::Start {
            model: "claude-sonnet-4-5".into(),
            response_id: Some("msg_1".into()),
        },
        Event::TextDelta {
            index: 0,
            text: "hi".into(),
        },
        Event::Usage(usage),
        Event::Done {
            stop_reason: StopReason::EndTurn,
            message: message.clone(),
            usage,
        },
    ]);
    let done = provider
        .complete(
            &model(),
            &Request::new("claude-sonnet-4-5"),
            &StreamOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(done.message, message);
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert!((done.cost.cache_read - 0.3).abs() < 1e-9);
    assert!((done.cost.total() - (0.0003 + 0.015 + 0.3)).abs() < 1e-9);
}

#[tokio::test]
async fn stream_without_done_is_truncated() {
    let provider = Scripted(vec![Event::TextDelta {
        index: 0,
        text: "par".into(),
    }]);
    let err = provider
        .complete(&model(), &Request::new("m"), &StreamOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Truncated { .. }), "{err}");
    assert!(err.is_retryable());
    assert!(err.to_string().contains("text delta"));
}

#[tokio::test]
async fn error_event_becomes_the_error() {
    let provider = Scripted(vec![Event::error(ProviderError::Overloaded {
        retry_after: None,
        status: 0,
        request_id: None,
        body: "overloaded_error".into(),
    })]);
    let err = provider
        .complete(&model(), &Request::new("m"), &StreamOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::Overloaded { .. }));
}
