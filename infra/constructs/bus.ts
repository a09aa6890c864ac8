import { Duration } from "aws-cdk-lib";
import { EventBus } from "aws-cdk-lib/aws-events";
import { Construct } from "constructs";

export interface ProjectBusProps {
  /** `redraft-<env>`. */
  readonly eventBusName: string;
  /**
   * Days the bus archive keeps events, so a lost submission or outcome can be replayed.
   * @default 14
   */
  readonly archiveDays?: number;
}

/**
 * The project's own event bus: clients put `Draft Submitted` on it (see Triggers), and the state
 * machine publishes `Draft Validated` / `Draft Needs Review` on it for whatever consumes outcomes.
 */
export class ProjectBus extends Construct {
  readonly bus: EventBus;

  constructor(scope: Construct, id: string, props: ProjectBusProps) {
    super(scope, id);
    this.bus = new EventBus(this, "Bus", { eventBusName: props.eventBusName });
    this.bus.archive("Archive", {
      description: `Every event on ${props.eventBusName}, for replay`,
      eventPattern: { account: [this.bus.env.account] },
      retention: Duration.days(props.archiveDays ?? 14),
    });
  }
}
