/** What each page of the viewer is: polled by the entry (app.ts) until another page replaces it. */
export interface View {
  /** Reads the API again and redraws what changed. */
  refresh(): Promise<void>;
  /** The page is left: answers still in flight are dropped. */
  stop(): void;
}
