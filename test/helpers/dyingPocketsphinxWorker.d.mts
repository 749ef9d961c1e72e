/** Audio (one sample of this value) that makes the test worker end its thread. */
export declare const DEATH_PILL: number;
