"""LegalBench's task facts: which metric grades a task, and its reasoning category.

Read from HazyResearch/legalbench at commit ce482446b8eac4403b6db2c17223af4514bb24e3:
``evaluation.py`` (``EXACT_MATCH_BALANCED_ACC_TASKS``, ``MANUAL_EVAL_TASKS`` and the order
in which ``evaluate`` tests a task name) and ``tasks.py`` (``ISSUE_TASKS``, ``RULE_TASKS``,
``CONCLUSION_TASKS``, ``INTERPRETATION_TASKS``, ``RHETORIC_TASKS`` — the paper's five
reasoning categories; every one of the 162 task folders is in exactly one). The names are
kept in upstream order. ``intra_rule_distinguishing`` is in the balanced-accuracy list
although no task folder has that name any more (it was renamed); it stays, as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "BALANCED_ACCURACY_TASKS",
    "CATEGORIES",
    "MANUAL_TASKS",
    "category_of",
    "metric_of",
]

# fmt: off
BALANCED_ACCURACY_TASKS: tuple[str, ...] = (
    "abercrombie", "canada_tax_court_outcomes", "citation_prediction_classification",
    "consumer_contracts_qa", "contract_nli_confidentiality_of_agreement",
    "contract_nli_explicit_identification",
    "contract_nli_inclusion_of_verbally_conveyed_information", "contract_nli_limited_use",
    "contract_nli_no_licensing", "contract_nli_notice_on_compelled_disclosure",
    "contract_nli_permissible_acquirement_of_similar_information",
    "contract_nli_permissible_copy",
    "contract_nli_permissible_development_of_similar_information",
    "contract_nli_permissible_post-agreement_possession",
    "contract_nli_return_of_confidential_information", "contract_nli_sharing_with_employees",
    "contract_nli_sharing_with_third-parties", "contract_nli_survival_of_obligations",
    "contract_qa", "corporate_lobbying", "cuad_affiliate_license-licensee",
    "cuad_affiliate_license-licensor", "cuad_anti-assignment", "cuad_audit_rights",
    "cuad_cap_on_liability", "cuad_change_of_control", "cuad_competitive_restriction_exception",
    "cuad_covenant_not_to_sue", "cuad_effective_date", "cuad_exclusivity",
    "cuad_expiration_date", "cuad_governing_law", "cuad_insurance",
    "cuad_ip_ownership_assignment", "cuad_irrevocable_or_perpetual_license",
    "cuad_joint_ip_ownership", "cuad_license_grant", "cuad_liquidated_damages",
    "cuad_minimum_commitment", "cuad_most_favored_nation", "cuad_no-solicit_of_customers",
    "cuad_no-solicit_of_employees", "cuad_non-compete", "cuad_non-disparagement",
    "cuad_non-transferable_license", "cuad_notice_period_to_terminate_renewal",
    "cuad_post-termination_services", "cuad_price_restrictions", "cuad_renewal_term",
    "cuad_revenue-profit_sharing", "cuad_rofr-rofo-rofn", "cuad_source_code_escrow",
    "cuad_termination_for_convenience", "cuad_third_party_beneficiary",
    "cuad_uncapped_liability", "cuad_unlimited-all-you-can-eat-license",
    "cuad_volume_restriction", "cuad_warranty_duration", "definition_classification",
    "diversity_1", "diversity_2", "diversity_3", "diversity_4", "diversity_5", "diversity_6",
    "function_of_decision_section", "hearsay", "insurance_policy_interpretation",
    "international_citizenship_questions", "intra_rule_distinguishing", "jcrew_blocker",
    "learned_hands_benefits", "learned_hands_business", "learned_hands_consumer",
    "learned_hands_courts", "learned_hands_crime", "learned_hands_divorce",
    "learned_hands_domestic_violence", "learned_hands_education", "learned_hands_employment",
    "learned_hands_estates", "learned_hands_family", "learned_hands_health",
    "learned_hands_housing", "learned_hands_immigration", "learned_hands_torts",
    "learned_hands_traffic", "legal_reasoning_causality",
    "maud_ability_to_consummate_concept_is_subject_to_mae_carveouts",
    "maud_financial_point_of_view_is_the_sole_consideration",
    "maud_accuracy_of_fundamental_target_rws_bringdown_standard",
    "maud_accuracy_of_target_general_rw_bringdown_timing_answer",
    "maud_accuracy_of_target_capitalization_rw_(outstanding_shares)_bringdown_standard_answer",
    "maud_additional_matching_rights_period_for_modifications_(cor)",
    "maud_application_of_buyer_consent_requirement_(negative_interim_covenant)",
    "maud_buyer_consent_requirement_(ordinary_course)",
    "maud_change_in_law__subject_to_disproportionate_impact_modifier",
    "maud_changes_in_gaap_or_other_accounting_principles__subject_to_disproportionate_impact_modifier",
    "maud_cor_permitted_in_response_to_intervening_event",
    "maud_cor_permitted_with_board_fiduciary_determination_only",
    "maud_cor_standard_(intervening_event)", "maud_cor_standard_(superior_offer)",
    "maud_definition_contains_knowledge_requirement_-_answer",
    "maud_definition_includes_asset_deals", "maud_definition_includes_stock_deals",
    "maud_fiduciary_exception__board_determination_standard",
    "maud_fiduciary_exception_board_determination_trigger_(no_shop)", "maud_fls_(mae)_standard",
    "maud_general_economic_and_financial_conditions_subject_to_disproportionate_impact_modifier",
    "maud_includes_consistent_with_past_practice", "maud_initial_matching_rights_period_(cor)",
    "maud_initial_matching_rights_period_(ftr)",
    "maud_intervening_event_-_required_to_occur_after_signing_-_answer",
    "maud_knowledge_definition",
    "maud_liability_standard_for_no-shop_breach_by_target_non-do_representatives",
    "maud_ordinary_course_efforts_standard",
    "maud_pandemic_or_other_public_health_event__subject_to_disproportionate_impact_modifier",
    "maud_pandemic_or_other_public_health_event_specific_reference_to_pandemic-related_governmental_responses_or_measures",
    "maud_relational_language_(mae)_applies_to", "maud_specific_performance",
    "maud_tail_period_length", "maud_type_of_consideration", "nys_judicial_ethics",
    "opp115_data_retention", "opp115_data_security", "opp115_do_not_track",
    "opp115_first_party_collection_use", "opp115_international_and_specific_audiences",
    "opp115_policy_change", "opp115_third_party_sharing_collection",
    "opp115_user_access,_edit_and_deletion", "opp115_user_choice_control",
    "oral_argument_question_purpose", "overruling", "personal_jurisdiction",
    "privacy_policy_entailment", "privacy_policy_qa", "proa", "sara_entailment",
    "successor_liability", "scalr", "supply_chain_disclosure_best_practice_accountability",
    "supply_chain_disclosure_best_practice_audits",
    "supply_chain_disclosure_best_practice_certification",
    "supply_chain_disclosure_best_practice_training",
    "supply_chain_disclosure_best_practice_verification",
    "supply_chain_disclosure_disclosed_accountability",
    "supply_chain_disclosure_disclosed_audits",
    "supply_chain_disclosure_disclosed_certification",
    "supply_chain_disclosure_disclosed_training",
    "supply_chain_disclosure_disclosed_verification", "telemarketing_sales_rule",
    "textualism_tool_dictionaries", "textualism_tool_plain", "ucc_v_common_law", "unfair_tos",
)

_ISSUE: tuple[str, ...] = (
    "corporate_lobbying", "learned_hands_benefits", "learned_hands_business",
    "learned_hands_consumer", "learned_hands_courts", "learned_hands_crime",
    "learned_hands_divorce", "learned_hands_domestic_violence", "learned_hands_education",
    "learned_hands_employment", "learned_hands_estates", "learned_hands_family",
    "learned_hands_health", "learned_hands_housing", "learned_hands_immigration",
    "learned_hands_torts", "learned_hands_traffic",
)

_RULE: tuple[str, ...] = (
    "rule_qa", "international_citizenship_questions", "nys_judicial_ethics",
    "citation_prediction_classification", "citation_prediction_open",
)

_CONCLUSION: tuple[str, ...] = (
    "abercrombie", "diversity_1", "diversity_2", "diversity_3", "diversity_4", "diversity_5",
    "diversity_6", "hearsay", "personal_jurisdiction", "successor_liability",
    "telemarketing_sales_rule", "ucc_v_common_law",
)

_INTERPRETATION: tuple[str, ...] = (
    "consumer_contracts_qa", "contract_nli_confidentiality_of_agreement",
    "contract_nli_explicit_identification",
    "contract_nli_inclusion_of_verbally_conveyed_information", "contract_nli_limited_use",
    "contract_nli_no_licensing", "contract_nli_notice_on_compelled_disclosure",
    "contract_nli_permissible_acquirement_of_similar_information",
    "contract_nli_permissible_copy",
    "contract_nli_permissible_development_of_similar_information",
    "contract_nli_permissible_post-agreement_possession",
    "contract_nli_return_of_confidential_information", "contract_nli_sharing_with_employees",
    "contract_nli_sharing_with_third-parties", "contract_nli_survival_of_obligations",
    "contract_qa", "cuad_affiliate_license-licensee", "cuad_affiliate_license-licensor",
    "cuad_anti-assignment", "cuad_audit_rights", "cuad_cap_on_liability",
    "cuad_change_of_control", "cuad_competitive_restriction_exception",
    "cuad_covenant_not_to_sue", "cuad_effective_date", "cuad_exclusivity",
    "cuad_expiration_date", "cuad_governing_law", "cuad_insurance",
    "cuad_ip_ownership_assignment", "cuad_irrevocable_or_perpetual_license",
    "cuad_joint_ip_ownership", "cuad_license_grant", "cuad_liquidated_damages",
    "cuad_minimum_commitment", "cuad_most_favored_nation", "cuad_no-solicit_of_customers",
    "cuad_no-solicit_of_employees", "cuad_non-compete", "cuad_non-disparagement",
    "cuad_non-transferable_license", "cuad_notice_period_to_terminate_renewal",
    "cuad_post-termination_services", "cuad_price_restrictions", "cuad_renewal_term",
    "cuad_revenue-profit_sharing", "cuad_rofr-rofo-rofn", "cuad_source_code_escrow",
    "cuad_termination_for_convenience", "cuad_third_party_beneficiary",
    "cuad_uncapped_liability", "cuad_unlimited-all-you-can-eat-license",
    "cuad_volume_restriction", "cuad_warranty_duration", "insurance_policy_interpretation",
    "jcrew_blocker", "maud_ability_to_consummate_concept_is_subject_to_mae_carveouts",
    "maud_financial_point_of_view_is_the_sole_consideration",
    "maud_accuracy_of_fundamental_target_rws_bringdown_standard",
    "maud_accuracy_of_target_general_rw_bringdown_timing_answer",
    "maud_accuracy_of_target_capitalization_rw_(outstanding_shares)_bringdown_standard_answer",
    "maud_additional_matching_rights_period_for_modifications_(cor)",
    "maud_application_of_buyer_consent_requirement_(negative_interim_covenant)",
    "maud_buyer_consent_requirement_(ordinary_course)",
    "maud_change_in_law__subject_to_disproportionate_impact_modifier",
    "maud_changes_in_gaap_or_other_accounting_principles__subject_to_disproportionate_impact_modifier",
    "maud_cor_permitted_in_response_to_intervening_event",
    "maud_cor_permitted_with_board_fiduciary_determination_only",
    "maud_cor_standard_(intervening_event)", "maud_cor_standard_(superior_offer)",
    "maud_definition_contains_knowledge_requirement_-_answer",
    "maud_definition_includes_asset_deals", "maud_definition_includes_stock_deals",
    "maud_fiduciary_exception__board_determination_standard",
    "maud_fiduciary_exception_board_determination_trigger_(no_shop)", "maud_fls_(mae)_standard",
    "maud_general_economic_and_financial_conditions_subject_to_disproportionate_impact_modifier",
    "maud_includes_consistent_with_past_practice", "maud_initial_matching_rights_period_(cor)",
    "maud_initial_matching_rights_period_(ftr)",
    "maud_intervening_event_-_required_to_occur_after_signing_-_answer",
    "maud_knowledge_definition",
    "maud_liability_standard_for_no-shop_breach_by_target_non-do_representatives",
    "maud_ordinary_course_efforts_standard",
    "maud_pandemic_or_other_public_health_event__subject_to_disproportionate_impact_modifier",
    "maud_pandemic_or_other_public_health_event_specific_reference_to_pandemic-related_governmental_responses_or_measures",
    "maud_relational_language_(mae)_applies_to", "maud_specific_performance",
    "maud_tail_period_length", "maud_type_of_consideration", "opp115_data_retention",
    "opp115_data_security", "opp115_do_not_track", "opp115_first_party_collection_use",
    "opp115_international_and_specific_audiences", "opp115_policy_change",
    "opp115_third_party_sharing_collection", "opp115_user_access,_edit_and_deletion",
    "opp115_user_choice_control", "privacy_policy_entailment", "privacy_policy_qa", "proa",
    "ssla_company_defendants", "ssla_individual_defendants", "ssla_plaintiff",
    "sara_entailment", "sara_numeric", "supply_chain_disclosure_best_practice_accountability",
    "supply_chain_disclosure_best_practice_audits",
    "supply_chain_disclosure_best_practice_certification",
    "supply_chain_disclosure_best_practice_training",
    "supply_chain_disclosure_best_practice_verification",
    "supply_chain_disclosure_disclosed_accountability",
    "supply_chain_disclosure_disclosed_audits",
    "supply_chain_disclosure_disclosed_certification",
    "supply_chain_disclosure_disclosed_training",
    "supply_chain_disclosure_disclosed_verification", "unfair_tos",
)

_RHETORIC: tuple[str, ...] = (
    "canada_tax_court_outcomes", "definition_classification", "definition_extraction",
    "function_of_decision_section", "legal_reasoning_causality",
    "oral_argument_question_purpose", "overruling", "scalr", "textualism_tool_dictionaries",
    "textualism_tool_plain",
)
# fmt: on

MANUAL_TASKS: tuple[str, ...] = ("rule_qa",)
"""Graded by hand upstream (``evaluate`` raises for them)."""

CATEGORIES: Mapping[str, tuple[str, ...]] = {
    "issue": _ISSUE,
    "rule": _RULE,
    "conclusion": _CONCLUSION,
    "interpretation": _INTERPRETATION,
    "rhetoric": _RHETORIC,
}
"""LegalBench's reasoning categories (``tasks.py``), in the paper's order."""

_BALANCED = frozenset(BALANCED_ACCURACY_TASKS)
_CATEGORY = {task: name for name, tasks in CATEGORIES.items() for task in tasks}


def metric_of(task: str) -> str | None:
    """The metric ``evaluation.evaluate`` applies to ``task``, tested in its order.

    ``balanced_accuracy`` (normalized exact match), ``sara_numeric`` (within 10 %),
    ``citation_open`` (the case name contained), ``definition_extraction`` (stemmed match),
    ``ssla_f1`` (micro F1), ``manual`` (graded by hand), or ``None`` for a task upstream
    does not know. The balanced-accuracy list is tested first, so ``successor_liability``
    (on that list) is balanced accuracy: its own F1 evaluator is never reached upstream.
    """
    if task in _BALANCED:
        return "balanced_accuracy"
    if task == "sara_numeric":
        return "sara_numeric"
    if task == "successor_liability":  # unreachable: it is on the list above, as upstream
        return "balanced_accuracy"
    if task == "citation_prediction_open":
        return "citation_open"
    if task == "definition_extraction":
        return "definition_extraction"
    if task.startswith("ssla"):
        return "ssla_f1"
    if task in MANUAL_TASKS:
        return "manual"
    return None


def category_of(task: str) -> str | None:
    """The task's reasoning category (``tasks.py``), or ``None`` for an unknown task."""
    return _CATEGORY.get(task)
