/** Audio (one sample of this value) that makes the test worker exit its process. */
export declare const DEATH_PILL: number;
