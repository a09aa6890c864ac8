import type { Draft } from "../../shared/draft.js";
import type { Rng } from "./rng.js";

/**
 * Seed-004-like exam questions for the benchmarks: eight clean single-best-answer items
 * (NBME style, all passing every mcq rule), varied per draft, and fault injectors that each
 * break exactly one error-severity rule of the mcq pack.
 */

interface McqOption {
  key: string;
  text: string;
}
export interface Question {
  type: string;
  vignette: string;
  stem: string;
  options: McqOption[];
  correct_answer: string;
  rationale: string;
}

interface Template {
  vignette: (age: number) => string;
  stem: string;
  /** The first option is the correct one. */
  options: readonly string[];
  rationale: string;
}

const TEMPLATES: readonly Template[] = [
  {
    vignette: (age) =>
      `A ${age}-year-old man presents with crushing chest pain for 40 minutes. ECG shows ST elevation in leads II, III and aVF.`,
    stem: "Which of the following is the most appropriate treatment for acute MI?",
    options: [
      "Administer aspirin and prepare for PCI",
      "Administer thrombolytics within 30 minutes",
      "Prescribe broad-spectrum antibiotics",
      "Start IV nitroglycerin infusion",
      "Initiate beta-blocker therapy",
    ],
    rationale:
      "Aspirin and primary PCI are first-line treatments for acute ST-elevation MI per AHA guidelines; antibiotics have no role, and nitrates or beta blockers do not restore coronary flow.",
  },
  {
    vignette: (age) =>
      `A ${age}-year-old woman has fatigue, pallor and spoon-shaped nails. Laboratory studies show a microcytic anemia with a low ferritin.`,
    stem: "Which of the following is the most likely cause of her anemia?",
    options: [
      "Iron deficiency from menstrual blood loss",
      "Vitamin B12 deficiency",
      "Folate deficiency from poor diet",
      "Beta thalassemia minor",
      "Anemia of chronic disease",
    ],
    rationale:
      "A microcytic anemia with low ferritin indicates iron deficiency, most often from menstrual loss in women of this age; B12 and folate deficiency are macrocytic, thalassemia has a normal ferritin.",
  },
  {
    vignette: (age) =>
      `A ${age}-year-old man with type 2 diabetes has an HbA1c of 8.9% on maximal metformin. He has heart failure with reduced ejection fraction.`,
    stem: "Which of the following is the most appropriate addition to his therapy?",
    options: [
      "An SGLT2 inhibitor such as empagliflozin",
      "A sulfonylurea such as glipizide",
      "A thiazolidinedione such as pioglitazone",
      "A DPP-4 inhibitor such as saxagliptin",
      "Basal insulin glargine at bedtime",
    ],
    rationale:
      "SGLT2 inhibitors lower glucose and reduce heart-failure hospitalization; pioglitazone and saxagliptin worsen heart failure, and sulfonylureas or insulin add hypoglycemia without cardiac benefit.",
  },
  {
    vignette: (age) =>
      `A ${Math.min(age, 12)}-year-old boy has a two-day history of sore throat, fever and tender cervical lymph nodes without cough. A rapid antigen test is positive.`,
    stem: "Which of the following is the most appropriate treatment?",
    options: [
      "Oral amoxicillin for ten days",
      "Oral azithromycin for five days",
      "Intramuscular ceftriaxone once daily",
      "Supportive care with oral fluids",
      "Oral prednisolone for three days",
    ],
    rationale:
      "Streptococcal pharyngitis is treated with a ten-day course of amoxicillin to prevent rheumatic fever; macrolides are reserved for allergy, and supportive care or steroids leave the infection untreated.",
  },
  {
    vignette: (age) =>
      `A ${age}-year-old woman has fever, a productive cough and right lower lobe consolidation on chest x-ray. She lives at home and is otherwise well.`,
    stem: "Which of the following organisms is the most likely cause?",
    options: [
      "Streptococcus pneumoniae",
      "Haemophilus influenzae",
      "Mycoplasma pneumoniae",
      "Legionella pneumophila",
      "Staphylococcus aureus",
    ],
    rationale:
      "Streptococcus pneumoniae is the most common cause of lobar community-acquired pneumonia in adults; the other organisms are less frequent and usually have distinguishing exposures or features.",
  },
  {
    vignette: (age) =>
      `A ${age}-year-old woman has weight loss, heat intolerance, a diffuse nontender goiter and bilateral exophthalmos.`,
    stem: "Which of the following is the most likely diagnosis?",
    options: [
      "Graves disease",
      "Toxic multinodular goiter",
      "Subacute granulomatous thyroiditis",
      "Toxic thyroid adenoma",
      "Hashimoto thyroiditis",
    ],
    rationale:
      "A diffuse goiter with exophthalmos and hyperthyroidism is characteristic of Graves disease; nodular disease lacks eye signs, and subacute thyroiditis causes a tender gland.",
  },
  {
    vignette: (age) =>
      `A ${age}-year-old man has sudden severe flank pain radiating to the groin, with microscopic hematuria on urinalysis.`,
    stem: "Which of the following is the most appropriate initial imaging study?",
    options: [
      "Noncontrast helical CT of the abdomen",
      "Renal ultrasonography",
      "Intravenous pyelography",
      "Plain abdominal radiography",
      "Contrast-enhanced MRI of the abdomen",
    ],
    rationale:
      "Noncontrast helical CT detects nearly every urinary stone and its complications quickly; ultrasonography is preferred in pregnancy, and plain films miss radiolucent stones.",
  },
  {
    vignette: (age) =>
      `A ${age}-year-old man has sudden right-sided weakness and aphasia that began 90 minutes ago. A CT scan of the head shows no hemorrhage.`,
    stem: "Which of the following is the most appropriate next step in management?",
    options: [
      "Intravenous alteplase",
      "Oral aspirin and clopidogrel",
      "Intravenous heparin infusion",
      "Urgent carotid endarterectomy",
      "Intravenous labetalol",
    ],
    rationale:
      "Within 4.5 hours of onset and with hemorrhage excluded, intravenous alteplase improves outcome in ischemic stroke; antiplatelets, heparin and surgery are not the first step.",
  },
];

const KEYS = ["A", "B", "C", "D", "E"];

const FULL_METADATA = {
  course_id: "course-uuid-1",
  slo_ids: ["slo-uuid-1"],
  bloom_level: "Apply",
  difficulty: "medium",
  usmle_system: "Cardiovascular",
};

/** A clean question: template `t`, a varied age, options in a random order. */
export function cleanQuestion(rng: Rng, t = rng.int(0, TEMPLATES.length - 1)): Question {
  const template = TEMPLATES[t % TEMPLATES.length] as Template;
  const order = rng.shuffle([0, 1, 2, 3, 4]);
  const options = order.map((i, k) => ({ key: KEYS[k] as string, text: template.options[i] as string }));
  const correct = order.indexOf(0);
  return {
    type: "single_best_answer",
    vignette: template.vignette(rng.int(18, 85)),
    stem: template.stem,
    options,
    correct_answer: KEYS[correct] as string,
    rationale: template.rationale,
  };
}

function cloneQuestion(q: Question): Question {
  return { ...q, options: q.options.map((o) => ({ ...o })) };
}

const correctIndex = (q: Question) => q.options.findIndex((o) => o.key === q.correct_answer);
/** A random distractor's index (never the keyed answer), or -1 when there is none. */
function distractor(q: Question, rng: Rng): number {
  const indices = q.options.map((_, i) => i).filter((i) => i !== correctIndex(q));
  return indices.length > 0 ? rng.pick(indices) : -1;
}
const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

const LONG_TAIL =
  " given together with close outpatient follow-up, repeated laboratory monitoring and a structured review of every other medication over the following several weeks";

/** The error-severity mcq rules, with a fault that breaks exactly that rule. */
export const MCQ_FAULTS: Record<string, (q: Question, rng: Rng) => Question> = {
  nbme_negation_detection: (q, rng) => ({
    ...q,
    stem: rng.pick([
      "Which of the following is NOT an appropriate choice for this patient?",
      "Each of the following is indicated EXCEPT which one?",
      "Which of the following is least likely to help this patient?",
    ]),
  }),
  nbme_absolute_terms: (q, rng) => {
    const i = distractor(q, rng);
    if (i < 0) return q;
    const out = cloneQuestion(q);
    const o = out.options[i] as McqOption;
    o.text = rng.chance(0.5) ? `Always ${lowerFirst(o.text)}` : `${o.text}, never delayed`;
    return out;
  },
  ext_rationale_completeness: (q, rng) => ({
    ...q,
    rationale: rng.pick(["", "See guidelines.", "Obvious."]),
  }),
  nbme_answer_homogeneity: (q, rng) => {
    const i = distractor(q, rng);
    if (i < 0) return q;
    const out = cloneQuestion(q);
    (out.options[i] as McqOption).text += LONG_TAIL;
    return out;
  },
  mcq_answer_key_valid: (q, rng) => {
    const correct = q.options[correctIndex(q)];
    return { ...q, correct_answer: rng.chance(0.5) && correct ? correct.text : "F" };
  },
  mcq_duplicate_options: (q, rng) => {
    const i = distractor(q, rng);
    if (i < 0) return q;
    const out = cloneQuestion(q);
    const j = (i + 1) % out.options.length;
    (out.options[i] as McqOption).text = (out.options[j] as McqOption).text;
    return out;
  },
  mcq_option_count: (q, rng) => {
    const c = correctIndex(q);
    const keep = c >= 0 ? [c, distractor(q, rng)].sort() : [0, 1];
    return { ...cloneQuestion(q), options: keep.map((i) => ({ ...(q.options[i] as McqOption) })) };
  },
  mcq_no_all_none_of_above: (q, rng) => {
    const i = distractor(q, rng);
    if (i < 0) return q;
    const out = cloneQuestion(q);
    (out.options[i] as McqOption).text = rng.pick(["All of the above", "None of the above"]);
    return out;
  },
  mcq_stem_asks_question: (q, rng) => ({
    ...q,
    stem: rng.pick([
      "The most appropriate treatment for this patient.",
      "Next step in management:",
      "Diagnosis",
    ]),
  }),
};
export const MCQ_FAULT_IDS = Object.keys(MCQ_FAULTS);

/** Whitespace that the mcq pack trims by itself (a recorded repair, no model needed). */
export function padWhitespace(q: Question): Question {
  const out = cloneQuestion(q);
  out.stem = `  ${out.stem}\n`;
  const first = out.options[0];
  if (first) first.text = `${first.text} `;
  return out;
}

export function injectMcqFaults(q: Question, faults: readonly string[], rng: Rng): Question {
  let out = q;
  for (const f of faults) {
    const inject = MCQ_FAULTS[f];
    if (!inject) throw new Error(`unknown mcq fault ${f}`);
    out = inject(out, rng);
  }
  return out;
}

export function mcqDraft(
  id: string,
  content: Question,
  metadata: Record<string, unknown> = FULL_METADATA,
): Draft {
  return {
    id,
    kind: "mcq",
    content,
    metadata,
    context: { intent: "Write one NBME-style single-best-answer question for the course objective." },
  };
}
