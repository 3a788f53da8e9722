CREATE TABLE `dns_records` (
	`id` text PRIMARY KEY NOT NULL,
	`site_id` text,
	`domain_id` text,
	`type` text NOT NULL,
	`subdomain` text NOT NULL,
	`value` text NOT NULL,
	`ttl` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`domain_id`) REFERENCES `domains`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dns_records_site_key` ON `dns_records` (`site_id`,`type`,`subdomain`,`value`) WHERE site_id IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `dns_records_domain_key` ON `dns_records` (`domain_id`,`type`,`subdomain`,`value`) WHERE domain_id IS NOT NULL;--> statement-breakpoint
CREATE TABLE `domains` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`registrar` text NOT NULL,
	`sandbox` integer NOT NULL,
	`registrar_ref` text NOT NULL,
	`expires_at` integer NOT NULL,
	`auto_renew` integer DEFAULT true NOT NULL,
	`locked` integer DEFAULT true NOT NULL,
	`privacy` integer DEFAULT true NOT NULL,
	`nameservers` text NOT NULL,
	`site_id` text,
	`renew_cents` integer NOT NULL,
	`free_first_year` integer DEFAULT false NOT NULL,
	`contact` text NOT NULL,
	`ca_legal_type` text,
	`renew_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`site_id`) REFERENCES `sites`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `domains_name` ON `domains` (`name`);--> statement-breakpoint
CREATE INDEX `domains_account` ON `domains` (`account_id`);--> statement-breakpoint
CREATE INDEX `domains_site` ON `domains` (`site_id`);--> statement-breakpoint
CREATE INDEX `domains_expiry` ON `domains` (`auto_renew`,`expires_at`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `payment_method_id` text;--> statement-breakpoint
ALTER TABLE `accounts` ADD `payment_method_label` text;