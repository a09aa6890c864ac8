import { MemoryRunStore } from "../../shared/store/memory.js";
import { describeRunStoreContract } from "./run-store-contract.js";

describeRunStoreContract("MemoryRunStore", async () => new MemoryRunStore());
