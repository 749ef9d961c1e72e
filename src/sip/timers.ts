// RFC 3261's timer values (§17, Table 4), shared by the transactions and the dialog's 2xx.

/** T1: the round-trip estimate, and the first retransmission interval. */
export const T1_MS = 500;
/** T2: the longest retransmission interval (the doubling stops there). */
export const T2_MS = 4000;
/** T4: how long a message may linger in the network. */
export const T4_MS = 5000;
/** 64·T1: when a transaction gives up (Timers B, F, H, J, L, M) and a 2xx's ACK is waited for. */
export const TRANSACTION_MS = 64 * T1_MS;
/** Timer D: how long an INVITE client transaction stays completed over UDP, ACKing a failure's retransmissions (0 over a stream). */
export const TIMER_D_MS = 32_000;
