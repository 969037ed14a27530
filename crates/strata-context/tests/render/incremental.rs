//! The incremental [`Renderer`] gives the pure render's bytes, requests and reports.

use proptest::prelude::*;
use strata_context::render::Divergence;
use strata_context::{RenderOptions, RenderPolicy, Renderer, render_with};

use super::properties::{Step, start, step, write};
use super::support::{Script, full, mid_only, no_mid};

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Leaf by leaf, with jumps back to earlier leaves (a branch switch), and a compaction.
    #[test]
    fn renderer_matches_the_pure_render(
        initial in 1usize..6,
        steps in prop::collection::vec(step(), 1..20),
        jumps in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        policy in prop::sample::select(vec![RenderPolicy::Strata, RenderPolicy::Naive, RenderPolicy::DynamicTools]),
    ) {
        let mut script = Script::new();
        start(&mut script, initial);
        let mut counter = 0;
        for step in &steps {
            write(&mut script, step, &mut counter);
        }
        let first_kept = script.user("before compaction");
        let live: Vec<serde_json::Value> = script.context().tools.live().map(|tool| tool.definition.clone()).collect();
        let folded = serde_json::to_value(
            script.context().system.folded().iter().map(|(name, text)| (name.as_str().to_owned(), text.clone())).collect::<std::collections::BTreeMap<_, _>>(),
        ).unwrap();
        script.compaction("summary", &first_kept, folded, &live);
        write(&mut script, &Step::User(1), &mut counter);
        let tree = script.tree();
        let mut leaves: Vec<String> = script.ids().to_vec();
        for jump in &jumps {
            let at = jump.index(leaves.len());
            let target = leaves[at].clone();
            leaves.insert(at + 1, target);
        }
        for capabilities in [full(), mid_only(), no_mid()] {
            let options = RenderOptions::new().cache_key("k").max_tokens(100).policy(policy);
            let mut renderer = Renderer::new(capabilities.clone(), options.clone());
            let mut previous = None;
            for leaf in &leaves {
                let context = script.context_at(&tree, leaf);
                let pure = render_with(&context, &capabilities, &options);
                let (incremental, report) = renderer.render(&context);
                prop_assert_eq!(&incremental.request, &pure.request, "request at {}", leaf);
                prop_assert_eq!(&incremental.bytes, &pure.bytes, "bytes at {}", leaf);
                prop_assert_eq!(&incremental.notes, &pure.notes);
                let expected = pure.report(previous.as_ref());
                prop_assert_eq!(&report, &expected, "report at {}", leaf);
                if let Some(Divergence::Extends { at }) = report.divergence {
                    prop_assert_eq!(Some(at), previous.as_ref().map(|p: &strata_context::Rendered| p.bytes.len()));
                }
                previous = Some(pure);
            }
        }
    }
}
