//! The conversation's composer slot, keyed by entry name. The normal composer
//! shows while no entry claims the slot; the question composer claims the
//! `"question"` entry while anything is pending.

use leptos::prelude::*;

/// The entry name the question composer registers.
pub const QUESTION_ENTRY: &str = "question";

/// Context: the composer slot. Cheap to copy.
#[derive(Debug, Clone, Copy)]
pub struct ComposerSlotContext {
    claims: RwSignal<Vec<(String, bool)>>,
    focus_requests: RwSignal<u64>,
}

impl Default for ComposerSlotContext {
    fn default() -> Self {
        Self::new()
    }
}

impl ComposerSlotContext {
    /// An empty slot: the normal composer shows.
    pub fn new() -> Self {
        Self {
            claims: RwSignal::new(Vec::new()),
            focus_requests: RwSignal::new(0),
        }
    }

    /// Registers entry `name` (first registration wins ties) and sets whether it
    /// wants the slot now.
    pub fn set_claim(&self, name: &str, wants: bool) {
        let _ = self
            .claims
            .try_update(|claims| match claims.iter_mut().find(|(n, _)| n == name) {
                Some(entry) => entry.1 = wants,
                None => claims.push((name.to_owned(), wants)),
            });
    }

    /// The entry holding the slot, `None` when the normal composer shows (reactive).
    pub fn owner(&self) -> Option<String> {
        self.claims.with(|claims| {
            claims
                .iter()
                .find(|(_, wants)| *wants)
                .map(|(name, _)| name.clone())
        })
    }

    /// True when no entry claims the slot (reactive).
    pub fn is_free(&self) -> bool {
        self.claims
            .with(|claims| claims.iter().all(|(_, wants)| !wants))
    }

    /// Asks the normal composer to take focus (the slot was handed back).
    pub fn focus_default(&self) {
        let _ = self.focus_requests.try_update(|n| *n += 1);
    }

    /// Counts focus requests (the normal composer tracks it).
    pub fn focus_requests(&self) -> u64 {
        self.focus_requests.get()
    }
}

/// The slot from context, if the composer is mounted inside one.
pub fn use_composer_slot() -> Option<ComposerSlotContext> {
    use_context::<ComposerSlotContext>()
}

/// The composer slot: provides [`ComposerSlotContext`] to its children (the
/// normal composer and any entries that may take it over). Typed children,
/// not `Children`: those are an erased view, whose type-erasure code was the
/// last of it in the page's wasm.
#[component]
pub fn ComposerSlot<C: IntoView + 'static>(
    /// The normal composer and the entries that may take over the slot.
    children: TypedChildren<C>,
) -> impl IntoView {
    let slot = ComposerSlotContext::new();
    provide_context(slot);
    view! {
        <div
            class="auq-slot"
            data-auq="slot"
            data-owner=move || slot.owner().unwrap_or_default()
        >
            {children.into_inner()()}
        </div>
    }
}
