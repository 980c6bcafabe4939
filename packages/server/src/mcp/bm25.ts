/**
 * BM25 ranking (Okapi BM25 with weighted fields, "BM25F"-style: a term's frequency in a document
 * is the weighted sum of its frequencies in the document's fields). Small and dependency-free;
 * the registry holds hundreds of tools, not millions.
 *
 * @module
 */

/** A document: an id and its fields' texts, each with a weight. */
export interface Bm25Document {
  readonly id: string;
  readonly fields: readonly { readonly text: string; readonly weight: number }[];
}

/** A ranked hit. */
export interface Bm25Hit {
  readonly id: string;
  readonly score: number;
}

const STOPWORDS = new Set(
  ("a an and are as at be by can do for from how i in into is it its me my of on or some " +
    "that the this to up with what which want need please using use").split(" "),
);

/**
 * Splits text into normalised terms: camelCase and `:_-./` boundaries split words, terms are
 * lower-cased, stop words dropped and suffixes lightly stemmed (`entities` → `entity`,
 * `reading` → `read`, `files` → `fil`, `file` → `fil`).
 *
 * @example
 * ```ts
 * tokenize("filesystem:read_file"); // ["filesystem", "read", "fil"]
 * ```
 */
export function tokenize(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z])([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== "" && !STOPWORDS.has(word))
    .map(stem);
}

/** A light suffix stemmer, applied to documents and queries alike. */
export function stem(word: string): string {
  let w = word;
  if (w.length > 4 && w.endsWith("ies")) w = w.slice(0, -3) + "y";
  else if (w.length > 4 && w.endsWith("sses")) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith("s") && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 5 && w.endsWith("ing")) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith("ed")) w = w.slice(0, -2);
  if (w.length > 3 && /([^aeioulsz])\1$/.test(w)) w = w.slice(0, -1);
  if (w.length > 3 && w.endsWith("e")) w = w.slice(0, -1);
  return w;
}

/** An immutable BM25 index over a set of documents. */
export class Bm25Index {
  readonly #k1: number;
  readonly #b: number;
  readonly #lengths: number[] = [];
  readonly #ids: string[] = [];
  /** term → (document index → weighted frequency) */
  readonly #postings = new Map<string, Map<number, number>>();
  readonly #averageLength: number;

  constructor(documents: readonly Bm25Document[], options: { k1?: number; b?: number } = {}) {
    this.#k1 = options.k1 ?? 1.2;
    this.#b = options.b ?? 0.75;
    let totalLength = 0;
    documents.forEach((document, index) => {
      let length = 0;
      for (const field of document.fields) {
        for (const term of tokenize(field.text)) {
          length += field.weight;
          const posting = this.#postings.get(term) ?? new Map<number, number>();
          posting.set(index, (posting.get(index) ?? 0) + field.weight);
          this.#postings.set(term, posting);
        }
      }
      this.#ids.push(document.id);
      this.#lengths.push(length);
      totalLength += length;
    });
    this.#averageLength = documents.length ? totalLength / documents.length : 1;
  }

  /** Documents matching at least one query term, best first (ties by id). */
  search(query: string, limit = 10): Bm25Hit[] {
    const scores = new Map<number, number>();
    const n = this.#ids.length;
    for (const term of new Set(tokenize(query))) {
      const posting = this.#postings.get(term);
      if (!posting) continue;
      const idf = Math.log(1 + (n - posting.size + 0.5) / (posting.size + 0.5));
      for (const [index, tf] of posting) {
        const norm = 1 - this.#b + this.#b * this.#lengths[index] / this.#averageLength;
        const score = idf * tf * (this.#k1 + 1) / (tf + this.#k1 * norm);
        scores.set(index, (scores.get(index) ?? 0) + score);
      }
    }
    return [...scores]
      .map(([index, score]) => ({ id: this.#ids[index], score }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit);
  }
}
