package kstate.kafkajvm;

/** Store-level operations (spec/ops-index.md, store.*): stores built through Kafka's Stores.* builders. */
final class Stores {
    private Stores() { }

    static void registerAll() {
    }

    static void closeAll() {
    }
}
