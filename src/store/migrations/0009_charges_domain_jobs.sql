-- Payments: account_id may be null while an anonymous checkout is charged (a table rebuild: SQLite
-- cannot drop NOT NULL); payment_method_id added (drizzle-kit selected it from the old table too;
-- removed by hand). Domains: the registration job's error, period and sent mark.
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_payments` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text,
	`checkout_id` text,
	`subscription_id` text,
	`amount_cents` integer NOT NULL,
	`currency` text NOT NULL,
	`status` text NOT NULL,
	`kind` text DEFAULT 'purchase' NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`idempotency_key` text,
	`payment_method_id` text,
	`period_start` integer,
	`period_end` integer,
	`failure_code` text,
	`failure_message` text,
	`processor` text NOT NULL,
	`processor_ref` text NOT NULL,
	`method_label` text NOT NULL,
	`test_mode` integer NOT NULL,
	`created_at` integer NOT NULL,
	`refunded_at` integer,
	`refund_ref` text,
	`refund_reason` text,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_payments`("id", "account_id", "checkout_id", "subscription_id", "amount_cents", "currency", "status", "kind", "description", "idempotency_key", "period_start", "period_end", "failure_code", "failure_message", "processor", "processor_ref", "method_label", "test_mode", "created_at", "refunded_at", "refund_ref", "refund_reason") SELECT "id", "account_id", "checkout_id", "subscription_id", "amount_cents", "currency", "status", "kind", "description", "idempotency_key", "period_start", "period_end", "failure_code", "failure_message", "processor", "processor_ref", "method_label", "test_mode", "created_at", "refunded_at", "refund_ref", "refund_reason" FROM `payments`;--> statement-breakpoint
DROP TABLE `payments`;--> statement-breakpoint
ALTER TABLE `__new_payments` RENAME TO `payments`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `payments_account` ON `payments` (`account_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `payments_idempotency` ON `payments` (`idempotency_key`) WHERE idempotency_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX `payments_subscription` ON `payments` (`subscription_id`,`status`);--> statement-breakpoint
ALTER TABLE `domains` ADD `error` text;--> statement-breakpoint
ALTER TABLE `domains` ADD `period_years` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `domains` ADD `register_sent_at` integer;